"""``make upgrade-db``: move an embedded PostgreSQL 16 ``var/pgdata/`` to PostgreSQL 18.

The old default (the ``pgserver`` 0.1.4 wheel) ran PostgreSQL 16.2 + pgvector 0.6.2; a 16
data directory cannot be opened by 18. This script:

1. installs ``pgserver==0.1.4`` into a throw-away venv ``var/pg16-venv/`` (for its 16
   binaries only; nothing is imported from it),
2. starts the old server on ``var/pgdata/`` (on a unix socket only),
3. dumps the ``synthorg`` database with ``pg_dump -Fc`` (the 18 client, which reads 16),
4. stops it and renames ``var/pgdata/`` to ``var/pgdata-pg16/`` (kept as the backup),
5. creates the new PostgreSQL 18 directory with its roles, restores the dump into it as the
   owner role (extensions excluded: the bootstrap installed pgvector 0.8) and runs
   ``manage.py migrate`` (new migrations, app-role privileges).

Stop ``make run`` first; a PostgreSQL 16 server still running on the directory (the old
code leaves one up) is stopped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

from synthorg.embedded_pg import (
    DATABASE_NAME,
    OWNER_ROLE,
    SOCKET_PORT,
    SUPERUSER,
    EmbeddedServer,
    bin_path,
    configured_data_dir,
    server_major,
)

OLD_WHEELS = {"16": "pgserver==0.1.4"}


def step(number: int, text: str) -> None:
    print(f"[{number}/5] {text}", flush=True)


def _owner_uid(path: Path) -> int | None:
    """Run the old server as the owner of its files when we are root."""
    if os.geteuid() != 0:
        return None
    return path.stat().st_uid


def _run(args: list, *, user: int | None = None, env: dict | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, user=user, env=env, cwd="/"
    )
    if done.returncode != 0:
        raise SystemExit(
            f"{Path(str(args[0])).name} failed ({done.returncode}):\n"
            f"{(done.stderr or done.stdout).strip()[-3000:]}"
        )
    return done.stdout


def old_bin_dir(old_venv: Path, requirement: str) -> Path:
    found = sorted(old_venv.glob("lib/python3*/site-packages/pgserver/pginstall/bin"))
    if not found:
        if not (old_venv / "bin" / "python").exists():
            venv.EnvBuilder(with_pip=True).create(old_venv)
        _run([old_venv / "bin" / "python", "-m", "pip", "install", "--quiet", requirement])
        found = sorted(old_venv.glob("lib/python3*/site-packages/pgserver/pginstall/bin"))
    if not found:
        raise SystemExit(f"{requirement} installed no pgserver/pginstall/bin in {old_venv}")
    return found[0]


def upgrade(base_dir: Path) -> int:
    var = base_dir / "var"
    pgdata = configured_data_dir(base_dir)
    version_file = pgdata / "PG_VERSION"
    wanted = str(server_major())
    if not version_file.exists():
        print(f"{pgdata} holds no database; nothing to upgrade (`make run` creates one).")
        return 0
    found = version_file.read_text().strip()
    if found == wanted:
        print(f"{pgdata} already is a PostgreSQL {wanted} directory; nothing to upgrade.")
        return 0
    requirement = OLD_WHEELS.get(found)
    if requirement is None:
        print(
            f"{pgdata} is a PostgreSQL {found} directory; only {', '.join(OLD_WHEELS)} can be "
            f"upgraded automatically. Dump it with PostgreSQL {found}'s pg_dump and restore "
            f"it into a PostgreSQL {wanted} server, or delete it.",
            file=sys.stderr,
        )
        return 2
    backup = pgdata.with_name(f"{pgdata.name}-pg{found}")
    if backup.exists():
        print(f"{backup} already exists; move it away first.", file=sys.stderr)
        return 2

    step(1, f"Installing {requirement} (PostgreSQL {found} binaries) into var/pg{found}-venv/")
    old_bin = old_bin_dir(var / f"pg{found}-venv", requirement)
    uid = _owner_uid(pgdata)
    if uid is not None:  # the server's user must reach the old binaries
        for parent in old_bin.parents:
            parent.chmod(parent.stat().st_mode | 0o011)

    step(2, f"Starting PostgreSQL {found} on {pgdata}")
    socket_dir = Path(tempfile.mkdtemp(prefix="synthorg-pg-upgrade-"))
    socket_dir.chmod(0o777)
    if _server_running(pgdata):
        # Left running by the old code (pgserver keeps it up while its handle file lists
        # pids, dead ones included). Nothing of this checkout can use it any more.
        print(f"      stopping the PostgreSQL {found} server still running on it", flush=True)
        _run([old_bin / "pg_ctl", "-D", pgdata, "-w", "-m", "fast", "stop"], user=uid)
    (pgdata / "postmaster.pid").unlink(missing_ok=True)  # left by a killed server
    log = var / f"pg{found}-upgrade.log"
    log.touch()
    if uid is not None:
        os.chown(log, uid, -1)
    _run(
        [
            old_bin / "pg_ctl",
            "-D",
            pgdata,
            "-l",
            log,
            "-w",
            "-o",
            f"-h '' -k {socket_dir} -p {SOCKET_PORT}",
            "start",
        ],
        user=uid,
    )
    dump = var / f"pg{found}-{DATABASE_NAME}.dump"
    try:
        step(3, f"Dumping database {DATABASE_NAME!r} to {dump}")
        _run(
            [
                bin_path("pg_dump"),
                "-Fc",
                "-h",
                socket_dir,
                "-p",
                SOCKET_PORT,
                "-U",
                SUPERUSER,
                "-d",
                DATABASE_NAME,
                "-f",
                dump,
            ]
        )
    finally:
        _run([old_bin / "pg_ctl", "-D", pgdata, "-w", "-m", "fast", "stop"], user=uid)

    step(4, f"Keeping the PostgreSQL {found} directory as {backup}")
    pgdata.rename(backup)
    for leftover in ("pgdata.handles", ".handle_pids.json"):
        (var / leftover).unlink(missing_ok=True)

    step(5, f"Creating the PostgreSQL {wanted} directory and restoring into it")
    server = EmbeddedServer(pgdata)
    server.attach()
    info = server.conninfo(SUPERUSER)
    host = info.split()[0].split("=", 1)[1]
    listing = _run([bin_path("pg_restore"), "-l", dump])
    # pgvector is created by the bootstrap (0.8); its old entries cannot be restored by the
    # owner role and would only downgrade nothing.
    kept = [
        line
        for line in listing.splitlines()
        if " EXTENSION " not in line and "COMMENT - EXTENSION" not in line
    ]
    list_file = var / f"pg{found}-restore.list"
    list_file.write_text("\n".join(kept) + "\n")
    _run(
        [
            bin_path("pg_restore"),
            "--no-owner",
            "--no-privileges",
            "--exit-on-error",
            f"--role={OWNER_ROLE}",
            "-h",
            host,
            "-p",
            SOCKET_PORT,
            "-U",
            SUPERUSER,
            "-d",
            DATABASE_NAME,
            "-L",
            list_file,
            dump,
        ]
    )
    print("      running manage.py migrate (new migrations, app-role privileges)", flush=True)
    done = subprocess.run(
        [sys.executable, str(base_dir / "manage.py"), "migrate", "--noinput"], cwd=base_dir
    )
    if done.returncode != 0:
        return done.returncode
    print(
        f"Done: {pgdata} is now PostgreSQL {wanted} with your data. The old directory is "
        f"{backup} and the dump {dump}; delete them (and var/pg{found}-venv/) once you are "
        "satisfied."
    )
    return 0


def _server_running(pgdata: Path) -> bool:
    from synthorg.embedded_pg import read_postmaster

    return read_postmaster(pgdata) is not None


if __name__ == "__main__":
    sys.exit(upgrade(Path(__file__).resolve().parent.parent))
