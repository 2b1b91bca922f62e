"""Fixtures of the project-level tests."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def server_dir():
    """A fresh directory for a throw-away embedded PostgreSQL data directory.

    Not under pytest's ``tmp_path``: as root the server runs as an unprivileged user that
    needs traverse rights on every parent, and every pytest process that starts (another
    checkout's run, a subprocess) resets ``/tmp/pytest-of-<user>`` to mode 0700.
    """
    path = Path(tempfile.mkdtemp(prefix="synthorg-test-pg-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
