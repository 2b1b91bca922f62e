"""Extractive preservation of dense content: verbatim key facts plus start/mid/end anchors.

Output format (stable; tests match it)::

    [extractive] 2 key facts, 3 anchors of 1234 chars
    Key facts:
    - https://example.com/x
    - version=1.2.3
    Anchors:
    [start] <first anchor_length chars>
    [mid] <anchor_length chars around the middle>
    [end] <last anchor_length chars>

Content no longer than three anchors is kept whole as one ``[full]`` anchor. Facts are
URLs, UUIDs, hex hashes (7–64 hex digits with both a letter and a digit), version numbers
and short ``key=value`` / ``key: value`` lines, in order of appearance, deduplicated and
capped at ``max_facts``.
"""

from __future__ import annotations

import re

DEFAULT_MAX_FACTS = 20
DEFAULT_ANCHOR_LENGTH = 150
_MAX_FACT_CHARS = 200

_FACT_PATTERNS = (
    re.compile(r"https?://[^\s<>\"'`)\]}]+"),
    re.compile(r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b"),
    re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,64}\b"),
    re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)+(?:-[0-9A-Za-z.]+)?\b|\bv\d+\.\d+\b"),
)
_KEY_VALUE_LINE = re.compile(r"^\s*[-*]?\s*\"?([A-Za-z_][\w.-]{0,60})\"?\s*[:=]\s*(\S.{0,150})$")


class ExtractivePreserver:
    def __init__(
        self, max_facts: int = DEFAULT_MAX_FACTS, anchor_length: int = DEFAULT_ANCHOR_LENGTH
    ) -> None:
        if max_facts < 1:
            raise ValueError(f"max_facts must be at least 1, got {max_facts}")
        if anchor_length < 1:
            raise ValueError(f"anchor_length must be at least 1, got {anchor_length}")
        self.max_facts = max_facts
        self.anchor_length = anchor_length

    def facts(self, content: str) -> list[str]:
        found: list[tuple[int, str]] = []
        for pattern in _FACT_PATTERNS:
            found.extend((m.start(), m.group(0).rstrip(".,;:")) for m in pattern.finditer(content))
        offset = 0
        for line in content.splitlines(keepends=True):
            match = _KEY_VALUE_LINE.match(line.rstrip("\r\n"))
            value = match.group(2).strip().rstrip(",") if match else ""
            if match and value not in ("{", "["):
                found.append((offset, f"{match.group(1)}={value.strip(chr(34))}"))
            offset += len(line)
        facts: list[str] = []
        seen: set[str] = set()
        for _, fact in sorted(found, key=lambda item: item[0]):
            fact = fact[:_MAX_FACT_CHARS]
            if fact and fact not in seen and not any(fact in other for other in seen):
                seen.add(fact)
                facts.append(fact)
            if len(facts) == self.max_facts:
                break
        return facts

    def anchors(self, content: str) -> list[tuple[str, str]]:
        text = content.strip()
        size = self.anchor_length
        if len(text) <= 3 * size:
            return [("full", text)]
        middle = len(text) // 2
        return [
            ("start", text[:size]),
            ("mid", text[middle - size // 2 : middle - size // 2 + size]),
            ("end", text[-size:]),
        ]

    def extract(self, content: str) -> str:
        facts = self.facts(content)
        anchors = self.anchors(content)
        lines = [
            f"[extractive] {len(facts)} key facts, {len(anchors)} anchors of "
            f"{len(content.strip())} chars"
        ]
        if facts:
            lines.append("Key facts:")
            lines.extend(f"- {fact}" for fact in facts)
        lines.append("Anchors:")
        lines.extend(f"[{name}] {_one_line(text)}" for name, text in anchors)
        return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ⏎ ".join(part.strip() for part in text.splitlines() if part.strip())
