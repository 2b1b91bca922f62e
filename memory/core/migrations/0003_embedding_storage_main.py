from django.db import migrations

# pgvector declares `vector` with EXTERNAL storage, so once a row passes the ~2 kB TOAST
# threshold (content + context + tsvector + a 1.5 kB vector usually do) the embedding moves
# out of line and every exact-scan row costs a TOAST index lookup (measured: ~3 extra buffer
# reads per row, the dominant cost of the dense leg). MAIN keeps it in the heap row and lets
# Postgres move the text columns out first. Applies to rows written from now on.
FORWARD = "ALTER TABLE memory_memory ALTER COLUMN embedding SET STORAGE MAIN;"
BACKWARD = "ALTER TABLE memory_memory ALTER COLUMN embedding SET STORAGE EXTERNAL;"


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_search_vector_trigger")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=BACKWARD)]
