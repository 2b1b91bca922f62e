"""The company config form's labels and help, read from ``docs/operating/configuration.md``.

The operator's reference for each field is that page (and, for one section, its own page:
:data:`SECTION_DOCS`); the form shows the same words rather than a second copy that drifts.
Three shapes of the page carry a field's meaning:

* a table whose first column (*key* or *field*) names keys (`` `temperature`,
  `max_tokens` ``, relative to the section its heading names: ``### memory.procedural``;
  *Lifecycle defaults* is ``memory.consolidation``) and whose last column is *meaning* /
  *what it does to a memory*;
* a ``yaml`` example whose lines end in a comment (``max_core_tokens: 600  # 50..8000: …``);
* the bullets of *Defaults and knobs that act* (`` - `level` is … `` under ``memory``).

:func:`field_help` maps a dotted path (``memory.dream.max_core_tokens``) to that text, the
first mention winning. :func:`field_label` is the field's name as words.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from django.conf import settings

DOC = Path("docs") / "operating" / "configuration.md"
#: other pages with a table of one section's fields, and the heading above that table
SECTION_DOCS = ((Path("docs") / "operating" / "fine-tune.md", "Configuration", "memory.fine_tune"),)
MAX_HELP_CHARS = 400

_HEADING = re.compile(r"^#{2,4}\s+(.*?)\s*$")
_DOTTED = re.compile(r"\b((?:memory|org_memory)(?:\.[a-z_]+)*)\b")
_YAML_KEY = re.compile(r"^(\s*)([a-z_]+):(.*)$")
_TICKED = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
#: headings that name their section in words, not as a dotted path
_HEADING_SECTIONS = {
    "Lifecycle defaults": "memory.consolidation",
    "Defaults and knobs that act": "memory",
}
#: last-column titles of the tables that say what a key means
_MEANING_COLUMNS = ("meaning", "what it does to a memory")
#: words the label keeps in capitals
_ACRONYMS = {"rrf", "llm", "ttl", "url", "md", "api", "id", "bm25", "yaml"}


def plain(text: str) -> str:
    """Markdown as plain text: link texts, no backticks or emphasis, one line."""
    text = _LINK.sub(r"\1", text).replace("**", "").replace("`", "").replace("\\|", "|")
    return " ".join(text.split())


def _shorten(text: str) -> str:
    if len(text) <= MAX_HELP_CHARS:
        return text
    cut = text[:MAX_HELP_CHARS]
    end = max(cut.rfind(". "), cut.rfind("; "))
    return (cut[: end + 1] if end > 80 else cut.rsplit(" ", 1)[0]) + " …"


def field_label(key: str) -> str:
    """``max_core_tokens`` → ``Max core tokens``; ``rrf_k`` → ``RRF k``."""
    words = [w.upper() if w in _ACRONYMS else w for w in key.split("_")]
    label = " ".join(words)
    return label[:1].upper() + label[1:]


def _absolute(prefix: str | None, key: str) -> str | None:
    if key.startswith(("memory.", "org_memory.")):
        return key
    return f"{prefix}.{key}" if prefix else None


def _table_keys(cell: str) -> list[str]:
    """The keys a table's first cell names: `` `a.b` / `c` `` is ``a.b`` and ``a.c``."""
    keys: list[str] = []
    for token in _TICKED.findall(cell.split(" (or ")[0]):
        token = token.split(":")[0].strip()
        if "[" in token or " " in token or not re.fullmatch(r"[a-z_.]+", token):
            continue
        if keys and "." not in token and "." in keys[0]:
            token = f"{keys[0].rsplit('.', 1)[0]}.{token}"
        keys.append(token)
    return keys


class _Reader:
    def __init__(self) -> None:
        self.help: dict[str, str] = {}
        self.prefix: str | None = None
        self.meaning_table = False
        self.yaml_stack: list[tuple[int, str]] = []
        self.bullet: list[str] | None = None
        self.sections: dict[str, str] = dict(_HEADING_SECTIONS)

    def put(self, path: str | None, text: str) -> None:
        text = plain(text)
        if path and text and path not in self.help:
            self.help[path] = _shorten(text)

    def heading(self, title: str) -> None:
        self.end_bullet()
        found = _DOTTED.search(title)
        self.prefix = self.sections.get(title) or (found.group(1) if found else None)

    def table_row(self, line: str) -> None:
        cells = [c.strip() for c in line.strip().strip("|").replace("\\|", "\0").split("|")]
        cells = [c.replace("\0", "\\|") for c in cells]
        if len(cells) < 3 or set(cells[0]) <= set("-: "):
            return
        if cells[0] in ("key", "field"):
            self.meaning_table = cells[-1].lower() in _MEANING_COLUMNS
            return
        if not self.meaning_table:
            return
        for key in _table_keys(cells[0]):
            self.put(_absolute(self.prefix, key), cells[-1])

    def yaml_line(self, line: str) -> None:
        found = _YAML_KEY.match(line)
        if not found:
            return
        indent, key, rest = len(found.group(1)), found.group(2), found.group(3)
        while self.yaml_stack and self.yaml_stack[-1][0] >= indent:
            self.yaml_stack.pop()
        path = ".".join([k for _, k in self.yaml_stack] + [key])
        self.yaml_stack.append((indent, key))
        if "#" in rest:
            absolute = path.startswith(("memory.", "org_memory."))
            self.put(path if absolute else None, rest.split("#", 1)[1])

    def bullet_line(self, line: str) -> None:
        if self.prefix != "memory":
            return
        if line.startswith("- `"):
            self.end_bullet()
            self.bullet = [line[2:]]
        elif self.bullet is not None and line.startswith("  ") and line.strip():
            self.bullet.append(line)
        else:
            self.end_bullet()

    def end_bullet(self) -> None:
        if self.bullet:
            keys = _TICKED.findall(self.bullet[0])
            key = keys[0].split(":")[0].strip() if keys else ""
            if re.fullmatch(r"[a-z_.]+", key):
                self.put(_absolute("memory", key), " ".join(self.bullet))
        self.bullet = None


def parse_config_doc(text: str, sections: dict[str, str] | None = None) -> dict[str, str]:
    """Each dotted field path the page explains, with its text (see the module doc);
    ``sections`` names more headings' sections (``{"Configuration": "memory.fine_tune"}``)."""
    reader = _Reader()
    reader.sections = {**_HEADING_SECTIONS, **(sections or {})}
    fence: str | None = None
    for line in text.splitlines():
        if line.startswith("```"):
            reader.end_bullet()
            fence = None if fence is not None else line[3:].strip()
            reader.yaml_stack = []
            continue
        if fence is not None:
            if fence == "yaml":
                reader.yaml_line(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            reader.heading(heading.group(1))
        elif line.startswith("|"):
            reader.table_row(line)
        else:
            reader.bullet_line(line)
    reader.end_bullet()
    return reader.help


@functools.cache
def _doc_help() -> dict[str, str]:
    root = Path(settings.BASE_DIR)
    found: dict[str, str] = {}
    pages = [(DOC, {}), *((page, {heading: section}) for page, heading, section in SECTION_DOCS)]
    for page, sections in pages:
        if (root / page).is_file():  # an install without the docs: descriptions only
            text = (root / page).read_text(encoding="utf-8")
            for path, help_text in parse_config_doc(text, sections).items():
                found.setdefault(path, help_text)
    return found


def field_help(path: str) -> str:
    """What ``docs/operating/configuration.md`` says of the field at ``path`` ('' if nothing)."""
    return _doc_help().get(path, "")
