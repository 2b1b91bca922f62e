"""The suite's own state stays out of the checkout's ``var/`` and apart per xdist worker."""

import os
from pathlib import Path

from django.conf import settings


def test_company_files_go_to_this_runs_directory_exported_to_subprocesses(tmp_path_factory):
    files = Path(settings.SYNTHORG_TENANT_FILES_DIR)
    # under this process's (this worker's) pytest base directory, not var/tenant-files/
    assert files.is_relative_to(tmp_path_factory.getbasetemp())
    assert files.is_dir()
    assert not files.is_relative_to(Path(settings.BASE_DIR) / "var")
    # what manage.py serve started by a test reads from the environment
    assert os.environ["SYNTHORG_TENANT_FILES_DIR"] == str(files)
