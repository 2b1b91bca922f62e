"""Schema changes from tests: a separate autocommit connection as the owner role.

Test bodies run as the app role, which cannot create triggers or functions on the app's
tables. A test that needs such DDL uses ``transaction=True`` (so no open test transaction
holds locks on the table) and :func:`owner_cursor`, and undoes its DDL itself.
"""

from __future__ import annotations

import contextlib

import psycopg
from django.db import connection

from synthorg.db.roles import owner_overrides


@contextlib.contextmanager
def owner_cursor():
    fields = dict(connection.settings_dict)
    fields.update(owner_overrides() or {})
    params = {
        "dbname": fields["NAME"],
        "user": fields["USER"],
        "host": fields["HOST"] or None,
        "port": fields["PORT"] or None,
        "password": fields["PASSWORD"] or None,
    }
    with psycopg.connect(
        **{k: v for k, v in params.items() if v is not None}, autocommit=True
    ) as conn:
        yield conn.cursor()
