import django.contrib.postgres.indexes
from django.db import migrations

# Migration 0006 already switched these GIN indexes to fastupdate = off in the database;
# this records it in the model state so a future rebuild from the model keeps it.
STATE = [
    migrations.RemoveIndex(model_name="memory", name="memory_search_vector"),
    migrations.RemoveIndex(model_name="memory", name="memory_tags"),
    migrations.AddIndex(
        model_name="memory",
        index=django.contrib.postgres.indexes.GinIndex(
            fastupdate=False, fields=["search_vector"], name="memory_search_vector"
        ),
    ),
    migrations.AddIndex(
        model_name="memory",
        index=django.contrib.postgres.indexes.GinIndex(
            fastupdate=False, fields=["tags"], name="memory_tags"
        ),
    ),
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0006_bm25_scope_stats")]

    operations = [migrations.SeparateDatabaseAndState(state_operations=STATE)]
