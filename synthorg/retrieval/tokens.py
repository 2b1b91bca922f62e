"""The default token estimate (``len(text) // 4``): context packing and the core-policy block."""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """0 for empty text, else ``max(1, len(text) // 4)``."""
    if not text:
        return 0
    return max(1, len(text) // 4)


def max_chars_for_tokens(tokens: int) -> int:
    """The most characters a text may have for :func:`estimate_tokens` to count it as at
    most ``tokens`` tokens."""
    return 4 * tokens + 3 if tokens > 0 else 0
