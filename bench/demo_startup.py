"""How long ``make demo`` takes, from an empty data directory, until a newcomer sees it work.

    .venv/bin/python bench/demo_startup.py [--port 8391] [--demo-llm standin|none]

Runs ``make demo PORT=<port>`` from the checkout with ``SYNTHORG_PGDATA`` set to a fresh
temporary directory (a new embedded PostgreSQL: created, migrated, seeded), and measures
seconds from the start until

* ``seed_demo`` printed its summary (``… approval item(s) pending``),
* ``GET /healthz`` answered 200,
* the console inbox, logged in as the printed ``operator`` user, lists the evolver's
  approval item (``Org skill: …``).

Then it stops ``make demo`` as Ctrl-C does (SIGINT to its process group) and checks that
nothing outlived it: no process of the group is left and the stand-in's port (printed by
``manage.py demo_llm``) refuses connections. The temporary database is stopped and deleted.
Writes ``bench/results/demo_startup.json`` (``demo_startup_none.json`` with
``--demo-llm none``; ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 120
PASSWORD = re.compile(r"\(user operator, password (\S+)\)")
STANDIN = re.compile(r"LLM stand-in \S+ \(.*\) on (http://[^\s/]+)/v1")
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Output:
    """The demo's merged output, line by line, with the second each line arrived."""

    def __init__(self, stream, started: float) -> None:
        self.lines: list[tuple[float, str]] = []
        self._started = started
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            with self._lock:
                self.lines.append((time.monotonic() - self._started, line))

    def first(self, pattern: re.Pattern | str) -> tuple[float, re.Match] | None:
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        with self._lock:
            for at, line in self.lines:
                match = regex.search(line)
                if match:
                    return at, match
        return None


def inbox_lists_the_item(base: str, password: str) -> bool:
    with httpx.Client(base_url=base, timeout=10) as client:
        page = client.get("/console/login")
        token = CSRF.search(page.text)
        if token is None:
            return False
        client.post(
            "/console/login",
            data={
                "username": "operator",
                "password": password,
                "csrfmiddlewaretoken": token.group(1),
            },
            headers={"Referer": f"{base}/console/login"},
        )
        inbox = client.get("/console/inbox/")
        return inbox.status_code == 200 and "Org skill:" in inbox.text


def run(port: int, demo_llm: str, timeout: float, log: Path | None = None) -> dict:
    pgdata = Path(tempfile.mkdtemp(prefix="demo-startup-pg-"))
    shutil.rmtree(pgdata)  # empty: the embedded server creates it
    env = {**os.environ, "SYNTHORG_PGDATA": str(pgdata), "DEMO_LLM": demo_llm}
    env.pop("SYNTHORG_LLM_BASE_URL", None)
    command = ["make", "demo", f"PORT={port}"]
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    demo = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    output = Output(demo.stdout, started)
    base = f"http://127.0.0.1:{port}"
    healthz_at = inbox_at = None
    health: dict = {}
    try:
        while time.monotonic() - started < timeout and demo.poll() is None:
            if healthz_at is None:
                try:
                    response = httpx.get(f"{base}/healthz", timeout=2)
                    if response.status_code == 200:
                        healthz_at, health = time.monotonic() - started, response.json()
                except httpx.HTTPError:
                    pass
            password = output.first(PASSWORD)
            if (
                healthz_at is not None
                and password is not None
                and inbox_lists_the_item(base, password[1].group(1))
            ):
                inbox_at = time.monotonic() - started
                break
            time.sleep(0.25)
    finally:
        group = [p for p in psutil.process_iter() if _in_session(p, demo.pid)]
        os.killpg(demo.pid, signal.SIGINT)  # Ctrl-C
        try:
            demo.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
        time.sleep(1)
        left = [p.pid for p in group if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        subprocess.run(
            [sys.executable, "-m", "synthorg.embedded_pg", "clean", "--yes"],
            cwd=ROOT,
            env=env,
            capture_output=True,
        )
        shutil.rmtree(pgdata, ignore_errors=True)
        pgdata.with_name(pgdata.name + ".lock").unlink(missing_ok=True)  # embedded_pg's lock
    if log is not None:
        log.write_text("".join(f"{at:7.1f}  {line}\n" for at, line in output.lines))
    seeded = output.first(r"approval item\(s\) pending")
    standin = output.first(STANDIN)
    standin_stopped = None
    if standin is not None:
        try:
            httpx.get(f"{standin[1].group(1)}/v1/models", timeout=2)
            standin_stopped = False
        except httpx.ConnectError:
            standin_stopped = True
    return {
        "command": f"bench/demo_startup.py --demo-llm {demo_llm}",
        "measures": f"SYNTHORG_PGDATA=<empty tmp dir> DEMO_LLM={demo_llm} {' '.join(command)}",
        "demo_llm": demo_llm,
        "target_seconds": TARGET_SECONDS,
        "seconds_to_seeded": round(seeded[0], 1) if seeded else None,
        "seeded_line": seeded[1].string.strip() if seeded else None,
        "seconds_to_healthz_200": round(healthz_at, 1) if healthz_at is not None else None,
        "seconds_to_inbox_item": round(inbox_at, 1) if inbox_at is not None else None,
        "within_target": inbox_at is not None and inbox_at <= TARGET_SECONDS,
        "healthz_llm": health.get("checks", {}).get("llm"),
        "make_exit_status_after_ctrl_c": demo.returncode,
        "processes_left_after_ctrl_c": left,
        "standin_stopped_with_make": standin_stopped,
        # the machine is shared: other work's load slows the migrations most
        "load_average_1min": {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)},
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
    }


def _in_session(proc: psutil.Process, session: int) -> bool:
    try:
        return os.getsid(proc.pid) == session
    except (OSError, psutil.Error):
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--demo-llm", choices=["standin", "none"], default="standin")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--log", type=Path, help="write the demo's output here (timestamped)")
    parser.add_argument("--out", type=Path, help="default: bench/results/demo_startup[_none].json")
    args = parser.parse_args()
    suffix = "" if args.demo_llm == "standin" else "_none"
    args.out = args.out or ROOT / f"bench/results/demo_startup{suffix}.json"
    result = run(args.port or free_port(), args.demo_llm, args.timeout, args.log)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if result["within_target"] and not result["processes_left_after_ctrl_c"] else 1


if __name__ == "__main__":
    sys.exit(main())
