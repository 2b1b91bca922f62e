"""Overlapping windows of a long text, each within the default embedder's reach (pure).

An embedder reads a bounded window (the default one 256 tokens, ≈ 1,000 characters of
English) and ignores the rest, so a longer text is embedded as overlapping windows and
scored by its best one: memories (``memory.core.chunking``) and org facts
(``orgmemory.embedding``) alike.
"""

from __future__ import annotations

#: Characters of one window (under the default embedder's 256 tokens for English text).
WINDOW_CHARS = 900
#: Characters two consecutive windows share, so a phrase cut by a boundary is whole in one.
OVERLAP_CHARS = 150
#: A window boundary moves back to the last whitespace within this many characters.
BOUNDARY_SLACK = 80


def text_windows(content: str, max_windows: int) -> list[str]:
    """``content`` as at most ``max_windows`` overlapping windows, first first (one when it
    fits a window); text past the last window is not embedded."""
    if len(content) <= WINDOW_CHARS or max_windows <= 1:
        return [content]  # the embedder reads what fits its window
    windows: list[str] = []
    start = 0
    while start < len(content) and len(windows) < max_windows:
        end = min(len(content), start + WINDOW_CHARS)
        if end < len(content):
            cut = content.rfind(" ", end - BOUNDARY_SLACK, end)
            if cut > start:
                end = cut
        windows.append(content[start:end])
        if end >= len(content):
            break
        nxt = end - OVERLAP_CHARS
        space = content.find(" ", nxt, nxt + BOUNDARY_SLACK)
        start = max(start + 1, space + 1 if space >= 0 else nxt)
    return windows
