from django.db import migrations

# The sparse leg reads search_vector for every candidate row (the @@ match and the tf
# unnest). With EXTENDED storage, rows over the ~2 kB TOAST threshold had it moved out of
# line, costing a TOAST lookup per row (measured: ~8 buffer reads per matching row, most of
# the BM25 statement's time). MAIN keeps it in the heap row (compressed if needed); the
# content/context text columns are moved out first. Applies to rows written from now on.
FORWARD = "ALTER TABLE memory_memory ALTER COLUMN search_vector SET STORAGE MAIN;"
BACKWARD = "ALTER TABLE memory_memory ALTER COLUMN search_vector SET STORAGE EXTENDED;"


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_embedding_storage_main")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=BACKWARD)]
