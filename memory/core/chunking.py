"""What the dense leg embeds for one memory: its windows (pure; no Django; the windowing
itself is :mod:`synthorg.retrieval.windows`, shared with org facts).

An embedder reads a bounded window (the default one 256 tokens, ≈ 1,000 characters of
English) and ignores the rest. A memory whose content is longer is embedded as overlapping
windows: the first goes into ``Memory.embedding``, each later one into a
:class:`~memory.core.models.memory.MemoryChunk` row; the dense leg scores the memory by its
best window and returns it once.

**Context is bounded.** The context (e.g. the message a reply answers) helps a short turn
that says little on its own through the sparse leg, which indexes it whole; embedded, it
drowns a long turn (or a short one answering a long message). Only the first
``context_chars`` characters of it (the company's ``memory.chunking``; default 0, the best on
both dev splits, measured: docs/benchmarks/retrieval.md#long-memories-and-context) are
appended to the first window, and only in the room the content leaves there.
"""

from __future__ import annotations

from synthorg.retrieval.windows import (  # noqa: F401 - the window's size, re-exported
    OVERLAP_CHARS,
    WINDOW_CHARS,
    text_windows,
)


def memory_windows(
    content: str, context: str = "", *, max_windows: int, context_chars: int
) -> list[str]:
    """The texts to embed for a memory, first window first (at least one, at most
    ``max_windows``). The first carries up to ``context_chars`` characters of ``context``,
    never more than the room its content leaves in a window."""
    windows = text_windows(content, max_windows)
    room = min(context_chars, WINDOW_CHARS - len(windows[0]))
    if context and room > 0:
        windows[0] = f"{windows[0]}\n{context[:room]}"
    return windows
