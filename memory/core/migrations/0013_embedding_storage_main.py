"""Memory rows are not TOASTed below a page; the vector and filter columns never are.

A memory row (content, context, search vector, a 384-dim vector of 1.5 kB) passes
PostgreSQL's default 2 kB TOAST threshold. With the default storage the toaster moved the
widest value out of line: the vector, so every distance the dense leg computed fetched it
from the TOAST table (an exact scan of one LoCoMo agent's 418 rows read 1,303 buffers
instead of 192: 2.2 ms instead of 0.5). With only the vector kept in the row, the toaster
moved the next values out instead: content and context (which every returned hit then
fetches back) and even the 28-byte ``embedder_id`` every dense scan filters on.

So the table's ``toast_tuple_target`` is a page (8160 bytes): a row that fits a page is
stored whole, uncompressed, and read without TOAST lookups. A longer row (long content)
is shortened from its ``EXTENDED`` columns first (content, context, search_vector); the
vector and every short column a search, listing or filter reads are ``MAIN``: compressed or
moved out only as the last resort, when the row would not fit a page otherwise (very wide
embedders). Rows written before this migration keep their layout until rewritten (a
re-embedding job or any update of the row rewrites it). ``bench/storage_ab.py`` measures
both layouts in one table.
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


#: A heap page's usable size: rows up to it are never TOASTed.
TOAST_TUPLE_TARGET = 8160


def _storage(kind: str) -> str:
    """``MAIN``: this migration's layout; ``EXTENDED``: PostgreSQL's default (before it)."""
    target = (
        f"SET (toast_tuple_target = {TOAST_TUPLE_TARGET})"
        if kind == "MAIN"
        else "RESET (toast_tuple_target)"
    )
    columns = [f"ALTER COLUMN {column} SET STORAGE {kind}" for column in MAIN_COLUMNS]
    return "ALTER TABLE memory_memory " + ", ".join([target, *columns])


class Migration(migrations.Migration):
    dependencies = [("memory", "0012_reembed_job")]

    operations = [migrations.RunSQL(_storage("MAIN"), reverse_sql=_storage("EXTENDED"))]
