"""The benchmarks' throw-away database (bench/scratch_db.py): created and migrated, used as
the app role, isolated from the database the caller was using, dropped after an exception,
Ctrl-C and SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import ProgrammingError, connection

from bench.scratch_db import (
    PREFIX,
    TEMPLATE_PREFIX,
    database_exists,
    drop_database,
    schema_fingerprint,
    schema_sources,
    scratch_database,
)
from persistence.models import Company
from persistence.services.companies import company_create
from synthorg.db import roles

ROOT = Path(__file__).resolve().parents[2]


def _current() -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database(), current_user")
        return cursor.fetchone()


def _connect(database: str) -> psycopg.Connection:
    """A connection of its own to ``database``, as the role the default connection uses."""
    fields = connection.settings_dict
    return psycopg.connect(
        dbname=database,
        user=fields["USER"],
        password=fields["PASSWORD"] or None,
        host=fields["HOST"] or None,
        port=fields["PORT"] or None,
    )


def _slugs_in(database: str) -> set[str]:
    """Company slugs of ``database``, read on a connection of its own."""
    with _connect(database) as raw:
        return {row[0] for row in raw.execute("SELECT slug FROM persistence_company")}


@pytest.mark.django_db(transaction=True)
def test_scratch_database_is_isolated_runs_as_the_app_role_and_is_dropped_on_exception():
    outer_db, outer_user = _current()
    company_create(name="Outer", slug="outer-co")
    seen: dict = {}

    with (
        pytest.raises(RuntimeError, match="benchmark failed"),
        scratch_database("pytest_exc") as name,
    ):
        seen["name"] = name
        seen["current"] = _current()
        seen["outer_visible"] = Company.objects.filter(slug="outer-co").exists()
        company_create(name="Bench", slug="bench-co")
        seen["scratch_slugs"] = set(Company.objects.values_list("slug", flat=True))
        seen["outer_slugs_during"] = _slugs_in(outer_db)
        seen["scratch_exists_during"] = database_exists(name)
        if roles.owner_overrides():  # two roles: the schema is the owner's, not ours
            with (
                pytest.raises(ProgrammingError, match="must be owner"),
                connection.cursor() as cursor,
            ):
                cursor.execute("DROP TABLE persistence_company CASCADE")
        raise RuntimeError("benchmark failed")

    name = seen["name"]
    assert name == f"{PREFIX}pytest_exc_{os.getpid()}"
    # Inside: the scratch database, as the same (app) role the caller used.
    assert seen["current"] == (name, outer_user)
    assert seen["scratch_exists_during"] is True
    assert seen["outer_visible"] is False
    assert seen["scratch_slugs"] == {"bench-co"}
    assert "bench-co" not in seen["outer_slugs_during"]
    # After: dropped, and the connection is back on the caller's database and role.
    assert database_exists(name) is False
    assert _current() == (outer_db, outer_user)
    assert connection.settings_dict["NAME"] == outer_db
    assert settings.DATABASES["default"]["NAME"] == outer_db
    assert set(Company.objects.values_list("slug", flat=True)) == {"outer-co"}
    # The migrated template of this migration set stays for the next run to copy.
    assert database_exists(f"{TEMPLATE_PREFIX}{schema_fingerprint()}") is True


@pytest.mark.django_db(transaction=True)
def test_the_drop_waits_for_an_app_role_session_the_owner_may_not_end(monkeypatch):
    """The owner may not terminate the app role's sessions (FORCE answers 42501), and a
    session the app has just closed lingers for a moment: the drop retries until it is gone,
    and gives up with the server's error when it never goes."""
    if not roles.owner_overrides():
        pytest.skip("one role only: the connection may end its own sessions")
    with scratch_database("pytest_held") as name:
        held = _connect(name)
        threading.Timer(1.0, held.close).start()
    assert held.closed
    assert database_exists(name) is False

    monkeypatch.setattr("bench.scratch_db._DROP_PATIENCE_SECONDS", 0.5)
    with (
        pytest.raises(ProgrammingError, match="permission denied to terminate process"),
        scratch_database("pytest_stuck") as name,
    ):
        stuck = _connect(name)
    assert database_exists(name) is True
    stuck.close()
    app_login = roles.use_owner()
    try:
        drop_database(name)
    finally:
        roles.restore(app_login)
    assert database_exists(name) is False


def test_drop_database_refuses_a_name_that_is_not_a_scratch_database():
    with pytest.raises(ValueError, match="not a scratch database"):
        drop_database("synthorg")


# The child restores Python's Ctrl-C handler: a shell that runs the suite in the background
# (``make test &``) starts it with SIGINT ignored, and Python then leaves SIGINT ignored;
# Ctrl-C in a terminal, what the test stands for, always raises KeyboardInterrupt.
SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {root!r})
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")
    import django
    django.setup()
    from bench.scratch_db import scratch_database
    from persistence.services.companies import company_create
    with scratch_database("pytest_signal") as name:
        company_create(name="Bench", slug="bench-signal")
        print(name, flush=True)
        time.sleep(300)
    """
)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_scratch_database_is_dropped_when_the_run_is_interrupted(signum):
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(root=str(ROOT))],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        name = proc.stdout.readline().strip()
        assert name.startswith(f"{PREFIX}pytest_signal_"), proc.stderr.read()
        assert database_exists(name) is True
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert f"scratch database {name}: dropped" in stderr
    assert database_exists(name) is False
    assert proc.returncode != 0


def test_the_template_is_keyed_by_every_migration_and_the_project_modules_they_import():
    sources = {path.as_posix() for path in schema_sources()}
    assert f"{ROOT}/persistence/migrations/0001_initial.py" in sources
    assert {
        f"{ROOT}/synthorg/db/append_only.py",
        f"{ROOT}/memory/core/vector_indexes.py",
    } <= sources
    assert any(name.endswith("django/contrib/auth/migrations/0001_initial.py") for name in sources)
