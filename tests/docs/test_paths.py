"""The docs name only files that exist (a moved module must take its mentions with it).

Decision records are history: they may name what a decision removed.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = ("memory", "orgmemory", "persistence", "synthorg", "tests", "bench", "templates", "static")
PATH = re.compile(r"`((?:" + "|".join(TOP) + r")/[A-Za-z0-9_./-]+)`")


def _pages():
    yield ROOT / "README.md"
    for page in sorted((ROOT / "docs").rglob("*.md")):
        if "decisions" not in page.relative_to(ROOT / "docs").parts:
            yield page


def test_every_code_path_named_in_the_docs_exists():
    missing = [
        f"{page.relative_to(ROOT)}: {path}"
        for page in _pages()
        for path in PATH.findall(page.read_text())
        if not (ROOT / path.rstrip("/.")).exists()
    ]
    assert not missing, "docs name files that do not exist:\n" + "\n".join(missing)
