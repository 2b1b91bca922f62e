"""SKILL.md materialisation in the Agent Skills format (pure: no Django import).

A lesson becomes ``<directory>/<company-slug>/<skill-name>/SKILL.md``: YAML front matter
(``name``, ``description``, plus ``metadata`` saying where it came from) and a Markdown body
with when to use it, the steps and the rationale.

Writes are atomic (a temporary file in the same directory, fsync, ``os.replace``) so a reader
never sees half a file, and path traversal is impossible: both path components must be
plain slugs, and the resolved target must stay inside the resolved directory (which also
defeats a symlink planted inside it).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

SKILL_FILE = "SKILL.md"
_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
DESCRIPTION_MAX = 1024


class SkillPathError(ValueError):
    """A company slug or skill name that is not a safe single path component."""


def _yaml_string(value: str) -> str:
    # JSON strings are valid YAML double-quoted scalars: safe for any text.
    return json.dumps(value, ensure_ascii=False)


def render_skill_md(
    *,
    name: str,
    description: str,
    condition: str,
    action: str,
    rationale: str,
    steps: Sequence[str],
    metadata: Mapping[str, str] | None = None,
) -> str:
    lines = ["---", f"name: {_yaml_string(name)}"]
    lines.append(f"description: {_yaml_string(description[:DESCRIPTION_MAX])}")
    if metadata:
        lines.append("metadata:")
        lines.extend(f"  {key}: {_yaml_string(str(value))}" for key, value in metadata.items())
    lines += [
        "---",
        "",
        f"# {name}",
        "",
        "## When to use",
        "",
        condition,
        "",
        "## What to do",
        "",
        action,
        "",
        "## Steps",
        "",
        *[f"{i}. {step}" for i, step in enumerate(steps, start=1)],
        "",
        "## Why",
        "",
        rationale,
        "",
    ]
    return "\n".join(lines)


def skill_path(directory: str | Path, company_slug: str, skill_name: str) -> Path:
    """Where the SKILL.md of ``skill_name`` goes; :class:`SkillPathError` if unsafe."""
    for label, component in (("company slug", company_slug), ("skill name", skill_name)):
        if not _COMPONENT.match(component):
            raise SkillPathError(f"{label} {component!r} is not a safe path component")
    base = Path(directory).resolve()
    target = (base / company_slug / skill_name / SKILL_FILE).resolve()
    if not target.is_relative_to(base):
        raise SkillPathError(f"{target} is outside {base}")
    return target


def write_skill_md(directory: str | Path, company_slug: str, skill_name: str, text: str) -> Path:
    """Atomically write ``text`` as the skill's SKILL.md; returns the path written."""
    target = skill_path(directory, company_slug, skill_name)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Re-check after mkdir: a symlinked component would resolve elsewhere now.
    if target.parent.resolve() != skill_path(directory, company_slug, skill_name).parent:
        raise SkillPathError(f"{target.parent} resolves outside the skill directory")
    fd, tmp = tempfile.mkstemp(prefix=".SKILL.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
