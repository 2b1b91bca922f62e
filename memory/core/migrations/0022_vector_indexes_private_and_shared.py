"""Each (embedder, width) gets two HNSW indexes, private rows' and shared rows', in place of
one over all its rows (``memory.core.vector_indexes``).

pgvector filters a walk's candidates after the walk, so a company's shared rows, a small
share of a table that also holds every agent's private rows, were scanned exactly instead
(≈ 230 ms at 1M rows); in an index of their own they are walked. The two indexes are
disjoint: every row is in exactly one, as before.

Non-atomic, and every build is ``CONCURRENTLY``: writes go on while the indexes are built,
and the old index is dropped only once both new ones exist. Until then a search walks the
old one (the planner picks whichever valid index proves the part's predicate).
Built for every (embedder, width) the table holds, the default embedder's and every running
re-embedding job's target (whose index its job built before writing any row).
"""

import sys
import time

from django.db import migrations

DEFAULT_EMBEDDER = ("all-MiniLM-L6-v2-onnx-int8pc", 384)


def _pairs(cursor) -> list[tuple[str, int]]:
    cursor.execute(
        "SELECT DISTINCT embedder_id, vector_dims(embedding) FROM memory_memory "
        "WHERE embedding IS NOT NULL AND embedder_id <> '' AND vector_dims(embedding) <= 4000 "
        "UNION SELECT to_embedder_id, to_dims FROM memory_reembedjob "
        "WHERE status = 'running' AND to_dims <= 4000"
    )
    return sorted({DEFAULT_EMBEDDER, *cursor.fetchall()})


def _drop_indexes(cursor, pattern: str) -> None:
    cursor.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_memory' "
        "AND schemaname = current_schema() AND indexname LIKE %s",
        [pattern],
    )
    for (name,) in cursor.fetchall():
        cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


#: Above this many rows (the planner's estimate) each build is announced: an HNSW build over
#: a large table takes minutes (≈ 3.5 min for 1M rows), and ``migrate`` would look stuck.
ANNOUNCE_ABOVE_ROWS = 50_000


def split_indexes(apps, schema_editor):
    from memory.core.vector_indexes import create_index_sql, index_name

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'memory_memory'::regclass")
        announce = cursor.fetchone()[0] > ANNOUNCE_ABOVE_ROWS

        def _progress(message: str) -> None:
            if announce:
                print(f"\n  {message}", end="", file=sys.stdout, flush=True)

        for embedder_id, dims in _pairs(cursor):
            for shared in (False, True):
                name = index_name(embedder_id, dims, shared=shared)
                kind = "shared" if shared else "private"
                _progress(f"building {name} ({kind} rows of {embedder_id}, {dims} dims) …")
                started = time.monotonic()
                cursor.execute(
                    create_index_sql(embedder_id, dims, shared=shared, concurrently=True)
                )
                _progress(f"built {name} in {time.monotonic() - started:.1f} s")
        _drop_indexes(cursor, "memory\\_emb\\_%")


def merge_indexes(apps, schema_editor):
    from importlib import import_module

    legacy = import_module("memory.core.migrations.0011_embedding_any_width")
    with schema_editor.connection.cursor() as cursor:
        for embedder_id, dims in _pairs(cursor):
            cursor.execute(legacy.create_index_sql(embedder_id, dims, concurrently=True))
        _drop_indexes(cursor, "memory\\_embp\\_%")
        _drop_indexes(cursor, "memory\\_embs\\_%")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memory", "0021_fine_tune_synthetic_pairs")]

    operations = [migrations.RunPython(split_indexes, merge_indexes)]
