"""Shortening text for a reader (pure): never in the middle of a word, and saying so.

:func:`clip` keeps text that fits unchanged (whitespace runs folded). Text that does not fit
is cut at the last sentence end that keeps at least half of the allowance, else at the last
word boundary, and ends with :data:`MARK` so the reader knows something was left out. Only a
single word longer than the whole allowance is cut inside itself (there is no boundary to
cut at). :func:`clip_lines` does the same for text whose lines matter (a list, a summary):
whole lines while they fit, the first one that does not clipped, never inside a word.
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


def _mid_word(line: str, clipped: str) -> bool:
    body = clipped.removesuffix(MARK).rstrip()
    folded = fold(line)
    return (
        bool(body)
        and len(body) < len(folded)
        and body[-1].isalnum()
        and (folded[len(body)].isalnum())
    )


def clip_lines(text: str, limit: int) -> str:
    """``text`` (ends stripped) in at most ``limit`` characters, its lines kept as they are.

    Text that fits is returned unchanged. Otherwise the lines that fit are kept whole, the
    first line that does not is shortened with :func:`clip` (a sentence or word boundary,
    marked with :data:`MARK`); when no boundary of it fits, it is left out and :data:`MARK`
    ends the text on a line of its own. Nothing is cut inside a word.
    """
    text = str(text).strip()
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    kept: list[str] = []
    for line in lines:
        if len("\n".join([*kept, line])) > limit:
            break
        kept.append(line)
    prefix = "\n".join(kept) + ("\n" if kept else "")
    room = limit - len(prefix)
    following = lines[len(kept)]  # does not fit in room: clip marks it
    if room > len(MARK):
        clipped = clip(following, room)
        if clipped.removesuffix(MARK).strip() and not _mid_word(following, clipped):
            return prefix + clipped
    while kept and limit - len(prefix) < len(MARK):  # room for the mark
        kept.pop()
        prefix = "\n".join(kept) + ("\n" if kept else "")
    return (prefix + MARK)[: max(0, limit)]
