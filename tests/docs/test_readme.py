"""The README stays a front door: short, and every relative link resolves."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_readme_is_at_most_200_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move the rest into docs/"


def test_every_relative_link_in_the_readme_exists():
    targets = [t for t in LINK.findall(README.read_text()) if not re.match(r"[a-z]+:", t)]
    assert targets, "the README links to nothing"
    missing = [t for t in targets if not (ROOT / t.split("#")[0]).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
