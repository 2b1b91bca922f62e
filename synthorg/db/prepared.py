"""Hot statements as server-side prepared statements of their connection.

Django binds parameters client-side and sends every statement as text, so PostgreSQL parses,
analyses and plans each one again. For a statement a request runs every time with the same
text — the search statement, the search's planning round trip, the verified-key check —
planning costs more than running it (measured:
docs/benchmarks/http.md#where-each-millisecond-goes-issue-35). :func:`execute_prepared` runs
one through a server-binding psycopg cursor with ``prepare=True``: psycopg keeps up to
``prepared_max`` prepared statements per connection and reuses the one whose text and
parameter types match, and PostgreSQL keeps its plan (with ``plan_cache_mode`` ``auto``, a
generic plan once five custom plans cost no less).

Only these cursors are server-bound: Django's own cursors stay client-side, so nothing else
on the connection changes. The statements are logged as Django logs its own (``DEBUG``,
``CaptureQueriesContext``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import psycopg

#: psycopg's own default; any number turns preparing on (:class:`PreparedCursor` asks for it).
PREPARE_THRESHOLD = 5


class PreparedCursor(psycopg.Cursor):
    """A server-binding cursor whose every statement is prepared.

    ``logged``: Django logs the statements. psycopg leaves the query a reused prepared
    statement ran unset, and Django's log reads it.
    """

    logged = False

    def execute(self, query, params=None, *, prepare=None, binary=None):
        result = super().execute(query, params, prepare=True, binary=binary)
        if self.logged and self._query is None:
            self._query = self._convert_query(query, params)
        return result


def execute_prepared(
    connection, sql: str, params: Sequence | Mapping, settings: dict[str, str] | None = None
) -> list[tuple]:
    """``sql``'s rows, run as a prepared statement of Django ``connection``.

    ``settings`` (``plan_cache_mode``, an HNSW walk's settings …): set with
    ``set_config(..., true)`` and the statement sent in one psycopg pipeline, so they cost no
    round trip and end with the statement's implicit transaction; inside an outer
    transaction they are restored after the statement."""
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # Django turns psycopg's statement preparing off (None); only PreparedCursor's
        # statements are server-bound, so they are the only ones this enables.
        raw.prepare_threshold = PREPARE_THRESHOLD
    logged = connection.queries_logged
    if not settings:
        cursor = PreparedCursor(raw)
        cursor.logged = logged
        with connection._prepare_cursor(cursor) as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    restore = connection.in_atomic_block
    setup, cursor, reset = (PreparedCursor(raw) for _ in range(3))
    setup.logged = cursor.logged = reset.logged = logged
    with (
        connection._prepare_cursor(setup) as setup,
        connection._prepare_cursor(cursor) as cursor,
        connection._prepare_cursor(reset) as reset,
    ):
        with raw.pipeline():
            setup.execute(
                "SELECT " + ", ".join("set_config(%s, %s, true)" for _ in settings),
                [value for item in settings.items() for value in item],
            )
            cursor.execute(sql, params)
            if restore:
                reset.execute(
                    "SELECT set_config(name, reset_val, true) FROM pg_settings "
                    "WHERE name = ANY(%s)",
                    [list(settings)],
                )
        return cursor.fetchall()


def insert_prepared(instance, using: str) -> None:
    """Insert model ``instance`` (an auto-increment primary key, no parent model) on database
    ``using`` as a prepared statement, as ``Model.save()`` would on a new row: each field's
    ``pre_save`` and its value prepared for the database; ``pk`` and ``_state`` are set.
    For rows every request writes. It sends no model signal, so a model that has a
    ``pre_save`` or ``post_save`` receiver is saved by ``save()`` instead."""
    from django.db import connections
    from django.db.models.signals import post_save, pre_save

    model = type(instance)
    if pre_save.has_listeners(model) or post_save.has_listeners(model):
        instance.save(force_insert=True, using=using)
        return
    connection = connections[using]
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    sql = _INSERTS.get((model, using))
    if sql is None:
        quote = connection.ops.quote_name
        sql = (
            f"INSERT INTO {quote(model._meta.db_table)} "
            f"({', '.join(quote(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))}) RETURNING {quote(model._meta.pk.column)}"
        )
        _INSERTS[(model, using)] = sql
    instance._prepare_related_fields_for_save(operation_name="save")  # as save() refuses
    params = [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]
    ((pk,),) = execute_prepared(connection, sql, params)
    instance.pk = pk
    instance._state.adding = False
    instance._state.db = using


_INSERTS: dict[tuple[type, str], str] = {}
