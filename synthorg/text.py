"""Shortening text for a reader (pure): never in the middle of a word, and saying so.

:func:`clip` keeps text that fits unchanged (whitespace runs folded). Text that does not fit
is cut at the last sentence end that keeps at least half of the allowance, else at the last
word boundary, and ends with :data:`MARK` so the reader knows something was left out. Only a
single word longer than the whole allowance is cut inside itself (there is no boundary to
cut at).
"""

from __future__ import annotations

import re

MARK = "…"
_SENTENCE_END = re.compile(r"[.!?;:](?=\s)")


def fold(text: str) -> str:
    """Whitespace runs (newlines included) folded to one space, ends stripped."""
    return " ".join(str(text).split())


def clip(text: str, limit: int) -> str:
    """``text`` (folded) in at most ``limit`` characters, cut at a sentence or word boundary
    and marked with :data:`MARK` when it did not fit."""
    text = fold(text)
    if len(text) <= limit:
        return text
    if limit <= len(MARK):
        return MARK[:limit]
    room = limit - len(MARK)
    head = text[: room + 1]  # one more: a space right after the allowance is a boundary
    ends = [m.end() for m in _SENTENCE_END.finditer(head) if m.end() <= room]
    if ends and ends[-1] >= room // 2:
        return text[: ends[-1]].rstrip() + " " + MARK if ends[-1] < room else text[:room] + MARK
    space = head.rfind(" ")
    if space > 0:
        return head[:space].rstrip(" ,;:-") + MARK
    return text[:room] + MARK
