"""A throw-away database for one benchmark run: benchmarks never write to the user's database.

:func:`scratch_database` creates a new database on the configured server (the embedded one,
or ``DATABASE_URL``'s) as the schema owner role, applies the project's migrations to it
(``manage.py migrate``, which also grants the app role its row privileges), switches the
``default`` connection to it as the **app role** (what the service runs as) for the body of
the ``with`` block, and drops it at the end — after success, after an exception, after
Ctrl-C (``KeyboardInterrupt``) and after ``SIGTERM``/``SIGHUP`` (turned into ``SystemExit``
for the duration of the block, so the cleanup runs). The drop is ``DROP DATABASE … WITH
(FORCE)``: a server subprocess or a leftover connection to the scratch database does not
block it. The user's database is never written: the audit ledger is append-only and
``AuditEntry.company`` is PROTECT, so a benchmark company once created could never be
deleted again.

The migrations run once per migration set: the first run migrates a template database
(``synthorg_bench_template_<digest of the migrations>``) and every run copies it
(``CREATE DATABASE … TEMPLATE``), which takes a second where migrating takes most of a
minute. The template stays on the server for the next run; a new migration set builds a
new one and drops the old.

Names are ``synthorg_bench_<label>_<pid>`` (two runs of one benchmark do not collide). If a
run is killed so hard that no cleanup runs (``SIGKILL``, power loss), ``python
bench/scratch_db.py list`` shows what is left and ``python bench/scratch_db.py drop NAME``
(or ``drop-all``) removes it::

    from bench.scratch_db import scratch_database

    with scratch_database("locomo"):
        ...  # every query of the default connection goes to the scratch database
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator

PREFIX = "synthorg_bench_"
_LABEL = re.compile(r"^[a-z0-9_]{1,30}$")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def scratch_name(label: str) -> str:
    if not _LABEL.match(label):
        raise ValueError(f"scratch database label must match {_LABEL.pattern}: {label!r}")
    return f"{PREFIX}{label}_{os.getpid()}"


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM/SIGHUP raise ``SystemExit`` in the main thread while the block runs (their
    default action ends the process without running ``finally`` blocks)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum, _frame):
        raise SystemExit(128 + signum)

    saved = {sig: signal.signal(sig, _exit) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def database_exists(name: str, alias: str = "default") -> bool:
    from django.db import connections

    with connections[alias]._nodb_cursor() as cursor:
        return _database_exists(cursor, name)


def scratch_databases(alias: str = "default") -> list[str]:
    """Every scratch database on the server (left over by runs that could not clean up)."""
    from django.db import connections

    with connections[alias]._nodb_cursor() as cursor:
        cursor.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s ORDER BY 1",
            [PREFIX.replace("_", r"\_") + "%"],
        )
        return [row[0] for row in cursor.fetchall()]


#: how long a drop waits for sessions it may not end (see :func:`drop_database`)
_DROP_PATIENCE_SECONDS = 10.0


def drop_database(name: str, alias: str = "default") -> None:
    """``DROP DATABASE IF EXISTS name WITH (FORCE)`` (ends other sessions on it), as the
    role the connection is logged in as. Refuses names that are not scratch databases.

    The owner role may not end the app role's sessions (it is not a member of that role), and
    a session the app just closed stays in the server's process list for a moment after its
    socket closes: FORCE then refuses (SQLSTATE 42501). Such a drop is retried for up to
    :data:`_DROP_PATIENCE_SECONDS` while those sessions finish exiting."""
    import time

    from django.db import ProgrammingError, connections

    if not name.startswith(PREFIX):
        raise ValueError(f"not a scratch database: {name!r}")
    connection = connections[alias]
    connection.close()
    quoted = connection.ops.quote_name(name)
    deadline = time.monotonic() + _DROP_PATIENCE_SECONDS
    while True:
        try:
            with connection._nodb_cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
            return
        except ProgrammingError as exc:
            privilege = getattr(exc.__cause__, "sqlstate", None) == "42501"
            if not privilege or time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


TEMPLATE_PREFIX = f"{PREFIX}template_"
#: one session-level advisory lock key for building and copying the migrated template
_TEMPLATE_LOCK = 0x5C7A7C4


def schema_fingerprint() -> str:
    """A digest of :func:`schema_sources`: a template migrated from other migrations, or
    with other versions of the modules they import, is never copied."""
    import hashlib

    root = _root()
    digest = hashlib.sha256()
    for path in schema_sources():
        name = path.relative_to(root) if path.is_relative_to(root) else path
        digest.update(name.as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _root():
    from pathlib import Path

    return Path(__file__).resolve().parent.parent


def schema_sources() -> list:
    """What a migrated database is made of: the migration files of every installed app (the
    project's and its dependencies') and the project modules those files import (the SQL of
    triggers and indexes lives there)."""
    from pathlib import Path

    from django.apps import apps

    files: list[Path] = []
    for app in apps.get_app_configs():
        files.extend(sorted((Path(app.path) / "migrations").glob("*.py")))
    return [*files, *_project_modules_imported_by(files, _root())]


def _project_modules_imported_by(files, root) -> list:
    """The source files of the project modules that ``files`` import (one level)."""
    import ast
    import importlib.util
    from pathlib import Path

    names: set[str] = set()
    for path in files:
        if not path.is_relative_to(root) or ".venv" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
    sources = set()
    for name in names:
        origin = getattr(importlib.util.find_spec(name), "origin", None)
        if origin and Path(origin).is_relative_to(root) and ".venv" not in Path(origin).parts:
            sources.add(Path(origin))
    return sorted(sources)


def _database_exists(cursor, name: str) -> bool:
    cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
    return cursor.fetchone() is not None


@contextlib.contextmanager
def migrated_template(connection, verbosity: int = 0) -> Iterator[str]:
    """The name of the migrated template of this schema, migrated first if there is none yet;
    the block runs under the template lock (copy the template inside it).

    Migrating takes most of a database's start; a copy of an already migrated database
    (``CREATE DATABASE … TEMPLATE``) is a file copy. The template is built once per migration
    set (:func:`schema_fingerprint`), under an advisory lock so two runs do not build it
    twice; templates of older migration sets are dropped then. Nobody connects to a template
    after it is built, which a copy requires. The test databases are copies of it too
    (``tests/conftest.py``).
    """
    alias = connection.alias
    template = f"{TEMPLATE_PREFIX}{schema_fingerprint()}"
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [_TEMPLATE_LOCK])
        try:
            if not _database_exists(cursor, template):
                _log(f"migrating the template {template} (once per migration set) …")
                _build_template(connection, template, verbosity)
                for stale in scratch_databases(alias):
                    if stale.startswith(TEMPLATE_PREFIX) and stale != template:
                        drop_database(stale, alias)
            yield template
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_TEMPLATE_LOCK])


def _create(connection, name: str, alias: str, verbosity: int) -> None:
    """Create ``name`` as a copy of the migrated template of this schema, then point
    ``connection`` at it."""
    from django.conf import settings

    quote = connection.ops.quote_name
    with migrated_template(connection, verbosity) as template:
        _log(f"scratch database {name}: creating from {template} …")
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {quote(name)} TEMPLATE {quote(template)}")
    connection.close()
    connection.settings_dict["NAME"] = name
    settings.DATABASES[alias]["NAME"] = name
    connection.ensure_connection()


def _build_template(connection, template: str, verbosity: int) -> None:
    """Create and migrate ``template`` (Django's test-database creation, named), then close
    every connection to it. A failed build drops what it created."""
    from django.conf import settings

    alias = connection.alias
    original_name = connection.settings_dict["NAME"]
    test_settings = connection.settings_dict.setdefault("TEST", {})
    saved = {key: test_settings.get(key) for key in ("NAME", "TEMPLATE")}
    test_settings.update(NAME=template, TEMPLATE=None)  # migrated from an empty database
    try:
        connection.creation.create_test_db(verbosity=verbosity, autoclobber=True, serialize=False)
    except BaseException:
        connection.close()
        connection.settings_dict["NAME"] = original_name
        drop_database(template, alias)
        raise
    finally:
        test_settings.update(saved)
        connection.close()
        connection.settings_dict["NAME"] = original_name
        settings.DATABASES[alias]["NAME"] = original_name


@contextlib.contextmanager
def scratch_database(label: str, *, alias: str = "default", verbosity: int = 0) -> Iterator[str]:
    """Create and migrate a throw-away database, run the block on it as the app role, drop
    it at the end whatever happens. Yields the database's name."""
    from django.conf import settings
    from django.db import connections

    from synthorg.db import roles

    connection = connections[alias]
    name = scratch_name(label)
    original_name = connection.settings_dict["NAME"]
    test_settings = connection.settings_dict.setdefault("TEST", {})
    saved_test_name = test_settings.get("NAME")
    test_settings["NAME"] = name
    with _signals_raise():
        app_login = roles.use_owner(alias)  # None: one role only (DATABASE_URL alone)
        try:
            _create(connection, name, alias, verbosity)
            _log(f"scratch database {name}: ready (the benchmark runs as the app role)")
            owner_login = roles.use_app(app_login)
            try:
                yield name
            finally:
                roles.use_app(owner_login)  # back to the owner for the drop
        finally:
            try:
                connection.close()
                connection.settings_dict["NAME"] = original_name
                settings.DATABASES[alias]["NAME"] = original_name
                drop_database(name, alias)
                _log(f"scratch database {name}: dropped")
            finally:
                if saved_test_name is None:
                    test_settings.pop("NAME", None)
                else:
                    test_settings["NAME"] = saved_test_name
                roles.restore(app_login, alias)


def main() -> None:
    import argparse
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")
    import django

    django.setup()
    from synthorg.db import roles

    parser = argparse.ArgumentParser(
        description="List or drop benchmark scratch databases left by killed runs."
    )
    parser.add_argument("action", choices=["list", "drop", "drop-all"])
    parser.add_argument("names", nargs="*", help="drop: the databases to drop")
    args = parser.parse_args()
    with roles.owner_connection():
        names = scratch_databases()
        if args.action == "list":
            print("\n".join(names) if names else "no scratch database")
            return
        targets = names if args.action == "drop-all" else args.names
        for name in targets:
            drop_database(name)
            print(f"dropped {name}")


if __name__ == "__main__":
    main()
