"""Vectors and the columns searches filter on stay in the row (``SET STORAGE MAIN``).

A memory row (content, context, search vector, a 384-dim vector of 1.5 kB) passes
PostgreSQL's 2 kB TOAST threshold. With the default ``EXTENDED`` storage the toaster moved
the widest value out of line: the vector, so every distance the dense leg computed fetched
it from the TOAST table (an exact scan of one LoCoMo agent's 418 rows read 1,303 buffers
instead of 192, 0.8–1.4 ms instead of 0.15–0.17 ms). With the vector alone ``MAIN`` the
toaster then moved the next values out, down to the 28-byte ``embedder_id`` that every
dense scan filters on (1,359 buffers again). So the vector and every short column a search,
listing or filter reads are ``MAIN`` (compressed or moved out only as a last resort, when
the row would not fit a page: very wide embedders); ``content``, ``context`` and
``search_vector`` stay ``EXTENDED``: they go first, and are read for the few rows a search
returns (content, context) or matches (search_vector). Rows written before this migration
keep their layout until rewritten (a re-embedding job or any update of the row rewrites it).
"""

from django.db import migrations

#: Kept in the row: the vector and the short columns searches and listings filter on.
MAIN_COLUMNS = (
    "embedding",
    "embedder_id",
    "embedding_status",
    "namespace",
    "category",
    "source",
    "tags",
    "level",
    "session_id",
    "scope",
)


def _storage(kind: str) -> str:
    return "ALTER TABLE memory_memory " + ", ".join(
        f"ALTER COLUMN {column} SET STORAGE {kind}" for column in MAIN_COLUMNS
    )


class Migration(migrations.Migration):
    dependencies = [("memory", "0012_reembed_job")]

    operations = [migrations.RunSQL(_storage("MAIN"), reverse_sql=_storage("EXTENDED"))]
