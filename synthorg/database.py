"""Database configuration: ``DATABASE_URL`` or an embedded PostgreSQL + pgvector.

When ``DATABASE_URL`` is unset the project runs PostgreSQL 16 with pgvector from the
``pgserver`` wheel, its data under ``var/pgdata/``. The server is started on demand the
first time Django builds its settings (any ``manage.py`` command, the test run, the WSGI
app) and is reused by every later process; pgserver stops it when the last process that
uses it exits, and the data stays.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE_NAME = "synthorg"


class DatabaseUnavailableError(RuntimeError):
    """The configured database cannot be used (unreachable, misconfigured, no extension)."""


def parse_database_url(url: str) -> dict:
    """Translate ``postgresql://user:pass@host:port/name?opt=v`` into Django settings."""
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise DatabaseUnavailableError(
            f"DATABASE_URL must use the postgresql:// scheme (got {parsed.scheme!r}); "
            "SynthOrg Memory runs only on PostgreSQL with pgvector."
        )
    name = unquote(parsed.path.lstrip("/"))
    if not name:
        raise DatabaseUnavailableError("DATABASE_URL names no database (postgresql://…/NAME).")
    options = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    host = options.pop("host", None) or unquote(parsed.hostname or "")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "OPTIONS": options,
    }


def embedded_database_settings(base_dir: Path) -> dict:
    """Start (or join) the embedded server and return Django settings for it."""
    pgdata = base_dir / "var" / "pgdata"
    pgdata.mkdir(parents=True, exist_ok=True)
    try:
        import pgserver
    except ImportError as exc:  # pragma: no cover - only without requirements installed
        raise DatabaseUnavailableError(
            "DATABASE_URL is not set and the embedded database (pgserver) is not installed; "
            "run `make setup` or set DATABASE_URL."
        ) from exc
    try:
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:
        raise DatabaseUnavailableError(
            f"The embedded PostgreSQL in {pgdata} could not be started: {exc}. "
            f"See {pgdata / 'log'} for the server log."
        ) from exc
    info = server.get_postmaster_info()
    _ensure_embedded_database(server)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": EMBEDDED_DATABASE_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": str(info.socket_dir) if info.socket_dir else "127.0.0.1",
        "PORT": str(info.port or ""),
        "OPTIONS": {},
    }


def _ensure_embedded_database(server) -> None:
    import psycopg

    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [EMBEDDED_DATABASE_NAME]
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{EMBEDDED_DATABASE_NAME}"')


def database_settings(base_dir: Path) -> dict:
    """The ``default`` database: ``DATABASE_URL`` when set, else the embedded server."""
    url = os.environ.get("DATABASE_URL", "").strip()
    config = parse_database_url(url) if url else embedded_database_settings(base_dir)
    config["CONN_MAX_AGE"] = int(os.environ.get("DB_CONN_MAX_AGE", "60"))
    config["CONN_HEALTH_CHECKS"] = True
    test_name = os.environ.get("SYNTHORG_TEST_DATABASE")
    if test_name:
        config["TEST"] = {"NAME": test_name}
    return config
