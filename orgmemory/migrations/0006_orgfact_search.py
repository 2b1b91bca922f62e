import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

# Relevance ranking of the current facts used to load every live fact of the company into
# Python per query. The snapshot row now carries its own search_vector and doc_length
# (derived by the database from its content, with the same formula as the log rows'), the
# live ones are indexed (GIN), and the BM25 totals (N and the doc_length sum of the live
# facts per company and category) are kept by the database on every write, like memory's
# memory_bm25_scope_stats: a query reads the matching facts and one small row per category.
INSTALL = """
-- the log rows' function (migration 0002): it reads NEW.content and sets NEW.search_vector
-- and NEW.doc_length, columns the snapshot now has under the same names
CREATE TRIGGER orgmemory_fact_search_fields
    BEFORE INSERT OR UPDATE OF content ON orgmemory_orgfact
    FOR EACH ROW EXECUTE FUNCTION orgmemory_log_search_fields();

CREATE TABLE orgmemory_fact_bm25_stats (
    company_id bigint NOT NULL,
    category varchar(32) NOT NULL,
    n bigint NOT NULL DEFAULT 0,
    sum_doc_length bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (company_id, category)
);

CREATE OR REPLACE FUNCTION orgmemory_fact_bm25_stats_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.retracted_at IS NULL THEN
        UPDATE orgmemory_fact_bm25_stats
           SET n = n - 1, sum_doc_length = sum_doc_length - OLD.doc_length
         WHERE company_id = OLD.company_id AND category = OLD.category;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.retracted_at IS NULL THEN
        INSERT INTO orgmemory_fact_bm25_stats AS s (company_id, category, n, sum_doc_length)
        VALUES (NEW.company_id, NEW.category, 1, NEW.doc_length)
        ON CONFLICT (company_id, category) DO UPDATE
           SET n = s.n + 1, sum_doc_length = s.sum_doc_length + EXCLUDED.sum_doc_length;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION orgmemory_fact_bm25_stats_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM orgmemory_fact_bm25_stats;
    RETURN NULL;
END;
$$;

CREATE TRIGGER orgmemory_fact_bm25_stats_insert_delete
    AFTER INSERT OR DELETE ON orgmemory_orgfact
    FOR EACH ROW EXECUTE FUNCTION orgmemory_fact_bm25_stats_row();
CREATE TRIGGER orgmemory_fact_bm25_stats_update
    AFTER UPDATE ON orgmemory_orgfact
    FOR EACH ROW
    WHEN (OLD.company_id IS DISTINCT FROM NEW.company_id
          OR OLD.category IS DISTINCT FROM NEW.category
          OR OLD.retracted_at IS DISTINCT FROM NEW.retracted_at
          OR OLD.doc_length IS DISTINCT FROM NEW.doc_length)
    EXECUTE FUNCTION orgmemory_fact_bm25_stats_row();
CREATE TRIGGER orgmemory_fact_bm25_stats_truncate
    AFTER TRUNCATE ON orgmemory_orgfact
    FOR EACH STATEMENT EXECUTE FUNCTION orgmemory_fact_bm25_stats_truncate();

-- existing facts: derive their fields (the BEFORE trigger), then the totals
UPDATE orgmemory_orgfact SET content = content;
DELETE FROM orgmemory_fact_bm25_stats;
INSERT INTO orgmemory_fact_bm25_stats (company_id, category, n, sum_doc_length)
SELECT company_id, category, count(*), coalesce(sum(doc_length), 0)
  FROM orgmemory_orgfact
 WHERE retracted_at IS NULL
 GROUP BY company_id, category;
"""

REMOVE = """
DROP TRIGGER IF EXISTS orgmemory_fact_bm25_stats_truncate ON orgmemory_orgfact;
DROP TRIGGER IF EXISTS orgmemory_fact_bm25_stats_update ON orgmemory_orgfact;
DROP TRIGGER IF EXISTS orgmemory_fact_bm25_stats_insert_delete ON orgmemory_orgfact;
DROP FUNCTION IF EXISTS orgmemory_fact_bm25_stats_truncate();
DROP FUNCTION IF EXISTS orgmemory_fact_bm25_stats_row();
DROP TABLE IF EXISTS orgmemory_fact_bm25_stats;
DROP TRIGGER IF EXISTS orgmemory_fact_search_fields ON orgmemory_orgfact;
"""


class Migration(migrations.Migration):
    dependencies = [("orgmemory", "0005_embedding_any_width")]

    operations = [
        migrations.AddField(
            model_name="orgfact",
            name="search_vector",
            field=django.contrib.postgres.search.SearchVectorField(editable=False, null=True),
        ),
        migrations.AddField(
            model_name="orgfact",
            name="doc_length",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.AddIndex(
            model_name="orgfact",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("retracted_at__isnull", True)),
                fields=["search_vector"],
                name="orgfact_live_search",
            ),
        ),
        migrations.RunSQL(sql=INSTALL, reverse_sql=REMOVE),
    ]
