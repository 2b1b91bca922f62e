"""A change counter per write-gate group, so a store can skip the gate's second pass.

A store runs the write gate twice: once before embedding (no lock held) and once more under
the group's advisory lock, for what changed in between. The second pass is the same ≈ 9.5 ms
statement (docs/benchmarks/http.md, "Where each millisecond goes") and, nearly always, finds
what the first found. ``memory_gate_scope`` keeps one counter per (agent, namespace,
category) — keyed by the hash the advisory lock uses, so it holds no names — which statement
triggers bump for every row a statement inserts or deletes there, and for every row an
UPDATE moves in, out or changes in a way the gate reads (content, binding, liveness,
ordering). The store reads the counters before the first pass and again under the lock: the
same sum means nothing was committed to those groups in between and the first pass's answer
stands (counters only grow, so an unchanged sum is unchanged counters).

Like the BM25 totals (migration 0009): one aggregated upsert per statement, in key order.
``embedding_status`` is not watched (the backfill rewrites it constantly); a deduplicated
result reports the status its twin had when the first pass read it.
"""

from django.db import migrations

KEY = (
    "hashtextextended('memory-gate:' || {t}.agent_id || ':' || {t}.namespace || ':' "
    "|| {t}.category, 0)"
)

BUMP = """
    INSERT INTO memory_gate_scope AS s (scope, version)
    SELECT scope, count(*) FROM ({rows}) AS d(scope) GROUP BY scope ORDER BY scope
    ON CONFLICT (scope) DO UPDATE SET version = s.version + EXCLUDED.version;
"""

# the columns the gate's statement reads (its group, liveness, scoring and tie order)
WATCHED = (
    "agent_id, is_shared, level, namespace, category, subject, session_id, project_id, "
    "task_id, superseded_at, expires_at, created_at, content, context, search_vector"
)
CHANGED = (
    f"SELECT {KEY.format(t='o')} FROM old_rows o JOIN new_rows n USING (id) "
    f"WHERE (o.{WATCHED.replace(', ', ', o.')}) "
    f"IS DISTINCT FROM (n.{WATCHED.replace(', ', ', n.')}) "
    f"UNION ALL SELECT {KEY.format(t='n')} FROM old_rows o JOIN new_rows n USING (id) "
    f"WHERE (o.agent_id, o.namespace, o.category) IS DISTINCT FROM "
    f"(n.agent_id, n.namespace, n.category)"
)


def _function(name: str, rows: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
{BUMP.format(rows=rows)}
    RETURN NULL;
END;
$$;
"""


INSTALL = (
    """
CREATE TABLE memory_gate_scope (
    scope bigint PRIMARY KEY,
    version bigint NOT NULL DEFAULT 0
);
"""
    + _function("memory_gate_scope_inserted", f"SELECT {KEY.format(t='new_rows')} FROM new_rows")
    + _function("memory_gate_scope_deleted", f"SELECT {KEY.format(t='old_rows')} FROM old_rows")
    + _function("memory_gate_scope_updated", CHANGED)
    + """
CREATE TRIGGER memory_gate_scope_inserted
    AFTER INSERT ON memory_memory REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_gate_scope_inserted();
CREATE TRIGGER memory_gate_scope_deleted
    AFTER DELETE ON memory_memory REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_gate_scope_deleted();
CREATE TRIGGER memory_gate_scope_updated
    AFTER UPDATE ON memory_memory REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_gate_scope_updated();
"""
)

REMOVE = """
DROP TRIGGER IF EXISTS memory_gate_scope_updated ON memory_memory;
DROP TRIGGER IF EXISTS memory_gate_scope_deleted ON memory_memory;
DROP TRIGGER IF EXISTS memory_gate_scope_inserted ON memory_memory;
DROP FUNCTION IF EXISTS memory_gate_scope_updated();
DROP FUNCTION IF EXISTS memory_gate_scope_deleted();
DROP FUNCTION IF EXISTS memory_gate_scope_inserted();
DROP TABLE IF EXISTS memory_gate_scope;
"""


class Migration(migrations.Migration):
    dependencies = [("memory", "0026_memory_task_scope")]

    operations = [migrations.RunSQL(sql=INSTALL, reverse_sql=REMOVE)]
