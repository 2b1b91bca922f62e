"""Two database roles: the app's (owns nothing) and the schema owner's (migrations).

``settings.DATABASES["default"]`` logs in as the app role; ``settings.DATABASE_OWNER`` holds
the login fields of the owner role (None when only one role is configured). Schema work —
``migrate``, ``flush``, creating and dropping the test database — switches the ``default``
connection to the owner for its duration with :func:`owner_connection`; everything else,
including the test bodies, runs as the app role.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.conf import settings
from django.db import connections

from synthorg.embedded_pg import app_grants_sql


def owner_overrides() -> dict | None:
    return getattr(settings, "DATABASE_OWNER", None) or None


def _switch(alias: str, fields: dict) -> dict:
    """Log ``alias`` in with ``fields`` from its next query on; return the replaced fields."""
    connection = connections[alias]
    saved = {key: connection.settings_dict.get(key) for key in fields}
    connection.close()
    connection.settings_dict.update(fields)
    return saved


# The app role's login fields while the owner is switched in (one level: no nesting).
_app_login: dict | None = None


def use_owner(alias: str = "default") -> dict | None:
    """Switch ``alias`` to the owner role; returns what :func:`restore` needs (None: no-op)."""
    global _app_login
    overrides = owner_overrides()
    connection = connections[alias]
    if alias != "default" or not overrides:
        return None
    if connection.settings_dict.get("USER") == overrides["USER"]:
        return None  # already the owner (nested use)
    _app_login = _switch(alias, overrides)
    return _app_login


def restore(saved: dict | None, alias: str = "default") -> dict | None:
    """Undo :func:`use_owner`; returns the owner's fields (to switch back again later)."""
    global _app_login
    if saved is None:
        return None
    _app_login = None
    return _switch(alias, saved)


use_app = restore


@contextlib.contextmanager
def owner_connection(alias: str = "default") -> Iterator:
    """Run the block with ``connections[alias]`` logged in as the owner role."""
    saved = use_owner(alias)
    try:
        yield connections[alias]
    finally:
        restore(saved, alias)


def app_role(alias: str = "default") -> str | None:
    """The app role's name (None when only one role is configured)."""
    overrides = owner_overrides()
    if alias != "default" or not overrides:
        return None
    current = connections[alias].settings_dict.get("USER")
    if current == overrides["USER"]:
        return (_app_login or {}).get("USER") or None
    return current or None


def grant_app_privileges(connection, app: str, owner: str) -> None:
    """Row privileges (no TRUNCATE, no DDL) on every table and sequence for ``app``.

    Run as the owner after migrations; the default privileges cover what the owner creates
    later. Append-only tables keep UPDATE/DELETE so the trigger answers with its message
    ("table … is append-only"); the app role cannot disable or drop that trigger.
    """
    from psycopg import sql

    grants = sql.SQL(app_grants_sql()).format(owner=sql.Identifier(owner), app=sql.Identifier(app))
    with connection.cursor() as cursor:
        cursor.execute(grants.as_string(cursor.connection))


def truncate_guards(connection) -> list[tuple[str, str]]:
    """``(table, trigger)`` of every append-only table's TRUNCATE trigger."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, t.tgname FROM pg_trigger t
            JOIN pg_class c ON c.oid = t.tgrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND t.tgname LIKE '%%\\_no\\_truncate'
            ORDER BY 1
            """
        )
        return [(row[0], row[1]) for row in cursor.fetchall()]


def owner_execute(*statements: str, alias: str = "default") -> None:
    """Run maintenance/DDL statements (``ANALYZE``, index rebuilds in benchmarks) as the
    owner role; the app role may not. Outside a transaction only (the connection is
    switched)."""
    with owner_connection(alias) as connection, connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
