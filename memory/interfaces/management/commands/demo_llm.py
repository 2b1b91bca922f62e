"""``manage.py demo_llm``: serve the demo's stand-in model (:mod:`memory.interfaces.demo_llm`).

Alone it serves until Ctrl-C. With a command after ``--`` it starts the stand-in, runs the
command with ``SYNTHORG_LLM_BASE_URL`` / ``SYNTHORG_LLM_MODEL`` pointing at it (and no API
key), and stops the stand-in when the command ends, exiting with the command's status — the
way ``make demo`` runs ``seed_demo`` and ``serve``, so the stand-in never outlives them.
SIGINT/SIGTERM are passed on to the command; if this process is killed outright the command
gets SIGTERM (``PR_SET_PDEATHSIG`` on Linux).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading

from django.core.management.base import BaseCommand, CommandError

from memory.interfaces.demo_llm import MODEL_ID, DemoLLMServer
from synthorg.llm.standin import DEMO_STANDIN_LABEL

PR_SET_PDEATHSIG = 1


def _stop_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Command(BaseCommand):
    help = (
        "Serve the demo's stand-in model (not a real model) on a loopback port; with a "
        "command after --, run it against the stand-in and stop when it ends."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="A loopback address only.")
        parser.add_argument("--port", type=int, default=0, help="0 (default): a free port.")
        parser.add_argument("command", nargs=argparse.REMAINDER)

    def handle(self, *args, host, port, command, **options):
        if command and command[0] == "--":
            command = command[1:]
        try:
            server = DemoLLMServer(host=host, port=port)
            server.start()
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        try:
            self.stdout.write(
                self.style.WARNING(
                    f"LLM stand-in {MODEL_ID} ({DEMO_STANDIN_LABEL}) on {server.base_url}"
                )
            )
            status = self._run(command, server.base_url) if command else self._serve()
        finally:
            server.stop()
        if status:
            raise CommandError(f"{command[0]} exited with status {status}", returncode=status)

    def _serve(self) -> int:
        stopped = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stopped.set())
        stopped.wait()
        return 0

    def _run(self, command: list[str], base_url: str) -> int:
        env = {
            **os.environ,
            "SYNTHORG_LLM_BASE_URL": base_url,
            "SYNTHORG_LLM_MODEL": MODEL_ID,
            "SYNTHORG_LLM_API_KEY": "",
        }
        try:
            child = subprocess.Popen(
                command,
                env=env,
                preexec_fn=_stop_with_parent if sys.platform.startswith("linux") else None,
            )
        except OSError as exc:
            raise CommandError(f"cannot run {command[0]}: {exc}") from exc

        def forward(signum, _frame):
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

        signal.signal(signal.SIGINT, forward)
        signal.signal(signal.SIGTERM, forward)
        return child.wait()
