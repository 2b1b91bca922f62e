"""A real streaming standby of the embedded (or an external) primary, for tests and bench/.

``pg_basebackup -R`` from the primary into a short temporary directory (the socket path must
fit AF_UNIX), started with the same server binaries on a socket of its own; it never listens
on TCP. As root the standby runs as the embedded server's system user, like the primary.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

STANDBY_PORT = 5433  # names the standby's socket file
WAIT_S = 120


class StandbyUnavailable(RuntimeError):
    """The primary refused the base backup (no replication right, no pg_basebackup)."""


def server_binaries() -> Path | None:
    """The embedded server's ``bin/`` when it has ``pg_basebackup``, else None."""
    from synthorg.embedded_pg import bin_path

    try:
        path = bin_path("pg_basebackup")
    except Exception:
        return None
    return path.parent if path.exists() else None


def wait_for(condition, what: str, timeout: float = WAIT_S):
    """Poll ``condition`` until it is truthy (readiness, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def _run(args: list[str], user: str | None) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, capture_output=True, text=True, timeout=WAIT_S, user=user, cwd="/", check=False
    )


class Standby:
    """One standby: :meth:`create` (base backup + start + streaming), :meth:`destroy`."""

    def __init__(self, primary_conninfo: str, *, user: str | None, binaries: Path):
        self.primary_conninfo = primary_conninfo
        self.user = user
        self.bin = binaries
        self.root = Path(tempfile.mkdtemp(prefix="sor-rep-"))
        self.data = self.root / "data"
        if user is not None:
            shutil.chown(self.root, user, user)

    @property
    def socket_dir(self) -> Path:
        return self.root

    def create(self) -> Standby:
        backup = _run(
            [str(self.bin / "pg_basebackup"), "-D", str(self.data), "-R", "-X", "stream",
             "-c", "fast", "-d", self.primary_conninfo],
            self.user,
        )  # fmt: skip
        if backup.returncode != 0:
            shutil.rmtree(self.root, ignore_errors=True)
            raise StandbyUnavailable(backup.stderr.strip() or backup.stdout.strip())
        self.start()
        return self

    def pg_ctl(self, *args: str) -> None:
        done = _run([str(self.bin / "pg_ctl"), "-D", str(self.data), *args], self.user)
        if done.returncode != 0:
            raise RuntimeError(done.stderr or done.stdout)

    def start(self) -> None:
        self.pg_ctl(
            "-l", str(self.root / "log"), "-w", "-t", str(WAIT_S), "-o",
            f"-h '' -k {self.root} -p {STANDBY_PORT}", "start",
        )  # fmt: skip
        wait_for(self.streaming, "the standby to stream")

    def stop(self) -> None:
        self.pg_ctl("-w", "-m", "fast", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def destroy(self) -> None:
        if self.running():
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def superuser(self, dbname: str = "postgres"):
        return psycopg.connect(
            f"host={self.root} port={STANDBY_PORT} user=postgres dbname={dbname}",
            autocommit=True,
        )

    def primary(self):
        return psycopg.connect(self.primary_conninfo, autocommit=True)

    def streaming(self) -> bool:
        with self.primary() as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"
            ).fetchone()
        return row[0] > 0

    def wait_replayed(self) -> None:
        """Until the standby has replayed everything the primary wrote so far."""
        with self.primary() as conn:
            target = str(conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0])
        with self.superuser() as conn:
            wait_for(
                lambda: conn.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target]
                ).fetchone()[0],
                "the standby to replay",
            )
