"""What the dense leg embeds for one memory: its windows (pure; no Django).

An embedder reads a bounded window (the default one 256 tokens, ≈ 1,000 characters of
English) and ignores the rest. A memory whose content is longer is embedded as overlapping
windows: the first goes into ``Memory.embedding``, each later one into a
:class:`~memory.core.models.memory.MemoryChunk` row; the dense leg scores the memory by its
best window and returns it once.

**Context is bounded.** The context (e.g. the message a reply answers) helps a short turn
that says little on its own through the sparse leg, which indexes it whole; embedded, it
drowns a long turn (or a short one answering a long message). Only the first
``context_chars`` characters of it (the company's ``memory.chunking``; default 0, the measured
best) are appended to the first window, and only in the room the content leaves there.
"""

from __future__ import annotations

#: Characters of one window (under the default embedder's 256 tokens for English text).
WINDOW_CHARS = 900
#: Characters two consecutive windows share, so a phrase cut by a boundary is whole in one.
OVERLAP_CHARS = 150
#: A window boundary moves back to the last whitespace within this many characters.
BOUNDARY_SLACK = 80


def _windows(content: str, max_windows: int) -> list[str]:
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


def memory_windows(
    content: str, context: str = "", *, max_windows: int, context_chars: int
) -> list[str]:
    """The texts to embed for a memory, first window first (at least one, at most
    ``max_windows``). The first carries up to ``context_chars`` characters of ``context``,
    never more than the room its content leaves in a window."""
    windows = _windows(content, max_windows)
    room = min(context_chars, WINDOW_CHARS - len(windows[0]))
    if context and room > 0:
        windows[0] = f"{windows[0]}\n{context[:room]}"
    return windows


def window_count(content: str, *, max_windows: int) -> int:
    """How many windows :func:`memory_windows` gives ``content`` (1 when it fits one)."""
    return len(_windows(content, max_windows))
