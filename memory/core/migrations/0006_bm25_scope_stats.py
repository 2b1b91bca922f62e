from django.db import migrations

# BM25 needs N (live rows) and the average doc_length over the searched scope. Computing
# them per query meant scanning every row of the scope (the rows are wide: the embedding is
# stored in-row), which was most of the sparse leg's time at 10k memories per agent. This
# table keeps, per (company, agent, is_shared), the count and doc_length sum of the
# non-superseded rows, maintained by the database on every write (ORM, bulk, raw SQL,
# TRUNCATE), so it cannot drift. Expiry depends on the query's clock, so the search
# subtracts the expired rows (a range scan of the expires_at index) at query time.
#
# The GIN indexes stop using the fast-update pending list (see below).
INSTALL = """
CREATE TABLE memory_bm25_scope_stats (
    company_id bigint NOT NULL,
    agent_id bigint NOT NULL,
    is_shared boolean NOT NULL,
    n bigint NOT NULL DEFAULT 0,
    sum_doc_length bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (company_id, agent_id, is_shared)
);

CREATE OR REPLACE FUNCTION memory_bm25_scope_stats_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.superseded_at IS NULL THEN
        UPDATE memory_bm25_scope_stats
           SET n = n - 1, sum_doc_length = sum_doc_length - OLD.doc_length
         WHERE company_id = OLD.company_id AND agent_id = OLD.agent_id
           AND is_shared = OLD.is_shared;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.superseded_at IS NULL THEN
        INSERT INTO memory_bm25_scope_stats AS s
               (company_id, agent_id, is_shared, n, sum_doc_length)
        VALUES (NEW.company_id, NEW.agent_id, NEW.is_shared, 1, NEW.doc_length)
        ON CONFLICT (company_id, agent_id, is_shared) DO UPDATE
           SET n = s.n + 1, sum_doc_length = s.sum_doc_length + EXCLUDED.sum_doc_length;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION memory_bm25_scope_stats_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_bm25_scope_stats;
    RETURN NULL;
END;
$$;

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
CREATE TRIGGER memory_bm25_scope_stats_truncate
    AFTER TRUNCATE ON memory_memory
    FOR EACH STATEMENT EXECUTE FUNCTION memory_bm25_scope_stats_truncate();

-- GIN fast update parks new entries in a pending list that every search then scans
-- linearly (measured: 8.5 ms of a 10 ms sparse leg right after a bulk load of 10k rows,
-- until autovacuum flushes it). Memory writes are embedding-bound, so inserting into the
-- GIN tree directly costs nothing noticeable; flush what is pending now.
ALTER INDEX memory_search_vector SET (fastupdate = off);
ALTER INDEX memory_tags SET (fastupdate = off);
SELECT gin_clean_pending_list('memory_search_vector'::regclass);
SELECT gin_clean_pending_list('memory_tags'::regclass);

INSERT INTO memory_bm25_scope_stats (company_id, agent_id, is_shared, n, sum_doc_length)
SELECT company_id, agent_id, is_shared, count(*), coalesce(sum(doc_length), 0)
  FROM memory_memory
 WHERE superseded_at IS NULL
 GROUP BY company_id, agent_id, is_shared;
"""

REMOVE = """
ALTER INDEX memory_tags RESET (fastupdate);
ALTER INDEX memory_search_vector RESET (fastupdate);
DROP TRIGGER IF EXISTS memory_bm25_scope_stats_truncate ON memory_memory;
DROP TRIGGER IF EXISTS memory_bm25_scope_stats_update ON memory_memory;
DROP TRIGGER IF EXISTS memory_bm25_scope_stats_insert_delete ON memory_memory;
DROP FUNCTION IF EXISTS memory_bm25_scope_stats_truncate();
DROP FUNCTION IF EXISTS memory_bm25_scope_stats_row();
DROP TABLE IF EXISTS memory_bm25_scope_stats;
"""


class Migration(migrations.Migration):
    dependencies = [("memory", "0005_archive_and_maintenance_runs")]

    operations = [migrations.RunSQL(sql=INSTALL, reverse_sql=REMOVE)]
