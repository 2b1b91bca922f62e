"""The embedding column holds vectors of any width; HNSW becomes one index per embedder.

``vector(384)`` → untyped ``vector``: a company may use an embedder of another width (an
OpenAI-compatible endpoint with 768, 1536 or 3072 dims) without a schema change. The one
HNSW index over the whole column is replaced by a partial expression index per
(embedder id, width) — see ``memory/vector_indexes.py`` — built here for every pair the
table holds and for the default embedder; later ones are built concurrently by the
re-embedding job. Changing the type resets the column's storage to pgvector's default, so
``STORAGE MAIN`` (migration 0003) is set again.

Non-atomic, and the indexes are built ``CONCURRENTLY``: the type change needs no table
rewrite (measured: 20,000 rows, same relfilenode), so on a live table writes only wait for
the brief ALTER; the HNSW builds (non-concurrently 27 s for 20,000 rows on the development
machine) run while writes go on, and the dense leg scans exactly until an index is valid.
"""

import hashlib

import pgvector.django.vector
from django.db import migrations

DEFAULT_EMBEDDER = ("all-MiniLM-L6-v2-onnx-int8pc", 384)


def create_index_sql(embedder_id: str, dims: int, *, concurrently: bool) -> str:
    """This migration's index over all rows of (embedder, dims), as it was written then
    (migration 0022 replaces it with one over private and one over shared rows)."""
    from memory.core.vector_indexes import LEGACY_PREFIX, sql_string
    from synthorg.retrieval.vectors import cosine_opclass, indexed_type

    digest = hashlib.sha256(f"{embedder_id}\x1f{int(dims)}".encode()).hexdigest()[:16]
    return (
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS "
        f"{LEGACY_PREFIX}{digest} ON memory_memory USING hnsw "
        f"((embedding::{indexed_type(dims)}) {cosine_opclass(dims)}) "
        "WITH (m = 16, ef_construction = 64) "
        f"WHERE embedder_id = {sql_string(embedder_id)} AND vector_dims(embedding) = {int(dims)}"
    )


def create_vector_indexes(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT embedder_id, vector_dims(embedding) FROM memory_memory "
            "WHERE embedding IS NOT NULL AND embedder_id <> '' AND vector_dims(embedding) <= 4000"
        )
        pairs = {DEFAULT_EMBEDDER, *cursor.fetchall()}
        for embedder_id, dims in sorted(pairs):
            cursor.execute(create_index_sql(embedder_id, dims, concurrently=True))


def drop_vector_indexes(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_memory' "
            "AND indexname LIKE 'memory\\_emb\\_%%'"
        )
        for (name,) in cursor.fetchall():
            cursor.execute(f"DROP INDEX CONCURRENTLY {name}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memory", "0010_merge_procedural_and_bm25_stats")]

    operations = [
        migrations.RemoveIndex(model_name="memory", name="memory_embedding_hnsw"),
        migrations.AlterField(
            model_name="memory",
            name="embedding",
            field=pgvector.django.vector.VectorField(blank=True, null=True),
        ),
        migrations.RunSQL(
            sql="ALTER TABLE memory_memory ALTER COLUMN embedding SET STORAGE MAIN;",
            reverse_sql="ALTER TABLE memory_memory ALTER COLUMN embedding SET STORAGE MAIN;",
        ),
        migrations.RunPython(create_vector_indexes, drop_vector_indexes),
    ]
