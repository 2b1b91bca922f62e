"""BM25 scope totals maintained once per statement instead of once per row.

Migration 0006's row triggers upserted ``memory_bm25_scope_stats`` for every inserted,
deleted or updated memory: a batch of 500 memories of one agent ran 500 upserts of the same
row. Statement triggers with transition tables apply one aggregated delta per
(company, agent, is_shared) group instead, in key order (so concurrent writers lock the
totals rows in the same order). The totals are the same: +1 / +doc_length for every live
(not superseded) row a statement adds, −1 / −doc_length for every live row it removes; an
UPDATE counts its old rows out and its new rows in, so only the changed groups move.
"""

from django.db import migrations

DELTA = """
    INSERT INTO memory_bm25_scope_stats AS s (company_id, agent_id, is_shared, n, sum_doc_length)
    SELECT company_id, agent_id, is_shared, sum(dn), sum(dl)
      FROM ({rows}) AS d(company_id, agent_id, is_shared, dn, dl)
     GROUP BY company_id, agent_id, is_shared
    HAVING sum(dn) <> 0 OR sum(dl) <> 0
     ORDER BY company_id, agent_id, is_shared
    ON CONFLICT (company_id, agent_id, is_shared) DO UPDATE
       SET n = s.n + EXCLUDED.n, sum_doc_length = s.sum_doc_length + EXCLUDED.sum_doc_length;
"""
ADDED = (
    "SELECT company_id, agent_id, is_shared, 1, doc_length::bigint "
    "FROM new_rows WHERE superseded_at IS NULL"
)
REMOVED = (
    "SELECT company_id, agent_id, is_shared, -1, -doc_length::bigint "
    "FROM old_rows WHERE superseded_at IS NULL"
)


def _function(name: str, rows: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
{DELTA.format(rows=rows)}
    RETURN NULL;
END;
$$;
"""


INSTALL = (
    """
DROP TRIGGER IF EXISTS memory_bm25_scope_stats_insert_delete ON memory_memory;
DROP TRIGGER IF EXISTS memory_bm25_scope_stats_update ON memory_memory;
"""
    + _function("memory_bm25_scope_stats_inserted", ADDED)
    + _function("memory_bm25_scope_stats_deleted", REMOVED)
    + _function("memory_bm25_scope_stats_updated", f"{ADDED} UNION ALL {REMOVED}")
    + """
CREATE TRIGGER memory_bm25_scope_stats_inserted
    AFTER INSERT ON memory_memory REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_bm25_scope_stats_inserted();
CREATE TRIGGER memory_bm25_scope_stats_deleted
    AFTER DELETE ON memory_memory REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_bm25_scope_stats_deleted();
CREATE TRIGGER memory_bm25_scope_stats_updated
    AFTER UPDATE ON memory_memory REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_bm25_scope_stats_updated();
"""
)

REMOVE = """
DROP TRIGGER IF EXISTS memory_bm25_scope_stats_updated ON memory_memory;
DROP TRIGGER IF EXISTS memory_bm25_scope_stats_deleted ON memory_memory;
DROP TRIGGER IF EXISTS memory_bm25_scope_stats_inserted ON memory_memory;
DROP FUNCTION IF EXISTS memory_bm25_scope_stats_updated();
DROP FUNCTION IF EXISTS memory_bm25_scope_stats_deleted();
DROP FUNCTION IF EXISTS memory_bm25_scope_stats_inserted();
CREATE TRIGGER memory_bm25_scope_stats_insert_delete
    AFTER INSERT OR DELETE ON memory_memory
    FOR EACH ROW EXECUTE FUNCTION memory_bm25_scope_stats_row();
CREATE TRIGGER memory_bm25_scope_stats_update
    AFTER UPDATE ON memory_memory
    FOR EACH ROW
    WHEN (OLD.company_id IS DISTINCT FROM NEW.company_id
          OR OLD.agent_id IS DISTINCT FROM NEW.agent_id
          OR OLD.is_shared IS DISTINCT FROM NEW.is_shared
          OR OLD.superseded_at IS DISTINCT FROM NEW.superseded_at
          OR OLD.doc_length IS DISTINCT FROM NEW.doc_length)
    EXECUTE FUNCTION memory_bm25_scope_stats_row();
"""


class Migration(migrations.Migration):
    dependencies = [("memory", "0008_reembed_previous_default_model")]

    operations = [migrations.RunSQL(sql=INSTALL, reverse_sql=REMOVE)]
