"""``synthorg.supervision.wake``: serve's Ctrl-C ends supervisord's poll at once through the
recovery listener, which survives the wake-up signal."""

import os
import subprocess
import sys
from pathlib import Path

import psutil

from synthorg.supervision import LISTENER, MARKER_ENV, wake

ROOT = Path(__file__).resolve().parents[2]


def test_wake_makes_the_listener_write_to_its_stderr_pipe_and_keep_listening():
    listener = subprocess.Popen(
        [sys.executable, "-m", "synthorg.supervision"],
        cwd=ROOT,
        env=dict(os.environ, SUPERVISOR_PROCESS_NAME=LISTENER, **{MARKER_ENV: "test"}),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # The listener announces READY (supervisord's protocol) once its handler is set.
        assert listener.stdout.readline() == b"READY\n"
        # This process stands in for supervisord: the listener is one of its children.
        assert wake(psutil.Process(os.getpid())) is True
        assert listener.stderr.readline() == b"synthorg.supervision: stop requested\n"
        assert listener.poll() is None  # still listening: the signal did not end it
    finally:
        listener.kill()
        listener.communicate()


def test_wake_without_a_listener_signals_nothing():
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert wake(psutil.Process(os.getpid())) is False
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
