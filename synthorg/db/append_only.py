"""Append-only tables enforced by PostgreSQL triggers, installed from migrations.

``AppendOnly("persistence_auditentry")`` in a migration's ``operations`` installs a
``BEFORE UPDATE OR DELETE`` row trigger (and a ``BEFORE TRUNCATE`` statement trigger) that
raises, so even raw SQL cannot rewrite history. Corrections are new rows.
"""

from __future__ import annotations

from django.db import migrations

APPEND_ONLY_SQLSTATE = "P0001"  # raise_exception: what psycopg reports for RAISE EXCEPTION

_FUNCTION_SQL = """
CREATE OR REPLACE FUNCTION synthorg_reject_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'table % is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING HINT = 'Record a correction as a new row instead.';
END;
$$;
"""


def _install_sql(table: str) -> str:
    return f"""
{_FUNCTION_SQL}
DROP TRIGGER IF EXISTS {table}_append_only ON {table};
CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION synthorg_reject_change();
DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};
CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION synthorg_reject_change();
"""


def _remove_sql(table: str) -> str:
    return f"""
DROP TRIGGER IF EXISTS {table}_append_only ON {table};
DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};
"""


def AppendOnly(table: str) -> migrations.RunSQL:
    """A migration operation that makes ``table`` append-only (reversible)."""
    return migrations.RunSQL(sql=_install_sql(table), reverse_sql=_remove_sql(table))
