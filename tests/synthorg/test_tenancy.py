"""Company directories and secret grants are keyed by the company's id, never its slug
(a slug can be renamed and the freed one taken by another company)."""

from __future__ import annotations

import pytest

from synthorg.tenancy import LAYOUT_MARKER, move_slug_directories, tenant_path


def _tree(base):
    return sorted(
        p.relative_to(base).as_posix() for p in base.rglob("*") if p.name != LAYOUT_MARKER
    )


def test_slug_directories_move_to_id_directories_once(tmp_path):
    for slug in ("acme", "beta", "7", "stray"):
        (tmp_path / slug).mkdir()
        (tmp_path / slug / "owner.txt").write_text(slug)
    # beta's id is 7 while another company's slug is "7": no collision, whatever the order
    done = move_slug_directories(tmp_path, [(3, "acme"), (7, "beta"), (12, "7"), (5, "gone")])
    assert sorted(done) == ["moved 7/ to 12/", "moved acme/ to 3/", "moved beta/ to 7/"]
    assert {d: (tmp_path / d / "owner.txt").read_text() for d in ("3", "7", "12")} == {
        "3": "acme",
        "7": "beta",
        "12": "7",
    }
    assert (tmp_path / "stray" / "owner.txt").is_file()  # no company's slug: left alone
    before = _tree(tmp_path)
    # run again (a slug "7" now looks like beta's directory): nothing moves
    assert move_slug_directories(tmp_path, [(3, "acme"), (7, "beta"), (12, "7")]) == []
    assert _tree(tmp_path) == before


def test_a_database_without_companies_leaves_no_marker(tmp_path):
    (tmp_path / "acme").mkdir()
    assert move_slug_directories(tmp_path, []) == []
    assert not (tmp_path / LAYOUT_MARKER).exists()  # the real database's run still moves
    assert move_slug_directories(tmp_path, [(3, "acme")]) == ["moved acme/ to 3/"]


def test_a_slug_directory_whose_id_directory_exists_is_left_for_the_operator(tmp_path):
    (tmp_path / "acme").mkdir()
    (tmp_path / "3").mkdir()
    assert move_slug_directories(tmp_path, [(3, "acme")]) == [
        "left acme/ at .moving-3/: 3/ already exists"
    ]
    assert (tmp_path / ".moving-3").is_dir() and (tmp_path / "3").is_dir()


def test_a_slug_is_not_a_company_id(settings, tmp_path):
    settings.SYNTHORG_TENANT_FILES_DIR = tmp_path
    assert tenant_path(4, "wiki") == (tmp_path / "4" / "wiki").resolve()
    for wrong in ("acme", "4", True, 0):
        with pytest.raises(TypeError):
            tenant_path(wrong, "wiki")


def test_a_grant_naming_a_slug_stops_the_server_at_start():
    """Grants used to name slugs; such a setting now fails at start, saying why, rather
    than at the first config write (a 500)."""
    import os
    import subprocess
    import sys

    from django.conf import settings

    env = {**os.environ, "SYNTHORG_SECRET_GRANTS": "SYNTHORG_SECRET_ACME=acme"}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "ImproperlyConfigured: SYNTHORG_SECRET_GRANTS: 'SYNTHORG_SECRET_ACME=acme' is not " in (
        done.stderr
    )
    assert "company ids, not slugs" in done.stderr
