"""What any API input must satisfy before a serializer sees it (pure: no Django import).

PostgreSQL cannot store a NUL character in ``text`` or ``jsonb``, and a lone UTF-16
surrogate (``"\\ud800"`` in JSON) is not a character at all: psycopg refuses to encode it.
A number such as ``1e999`` decodes to infinity, which ``jsonb`` cannot hold. All of these
used to surface as a 500 from deep inside a save. JSON nested thousands of levels deep
made the parser (and everything recursive after it) hit Python's recursion limit. One walk
over the decoded body rejects them all, so every endpoint gets the check for free.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

MAX_JSON_DEPTH = 64

# NUL, and any UTF-16 surrogate code point (only reachable through a lone "\ud800"-style
# escape: a valid pair decodes to one astral character).
FORBIDDEN_TEXT = re.compile("[\x00\ud800-\udfff]")

NUL_OR_SURROGATE = "Text may not contain NUL characters or unpaired UTF-16 surrogates."
NOT_FINITE = "Numbers must be finite (1e999 overflows to infinity, which JSON cannot store)."
TOO_DEEP = f"JSON may not be nested more than {MAX_JSON_DEPTH} levels deep."
INVALID_UTF8 = (
    "Text must be valid UTF-8: bytes that are not would be stored as U+FFFD, not as sent."
)


def is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class UnsafeInputError(ValueError):
    """``code`` is the problem code; ``field`` the dotted path of the offending value."""

    def __init__(self, message: str, *, code: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.field = field


def has_forbidden_text(text: str) -> bool:
    return FORBIDDEN_TEXT.search(text) is not None


def check_json_value(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`UnsafeInputError` for forbidden text (keys included) or deep nesting.

    Iterative, so a hostile document cannot exhaust the stack while being checked.
    """
    for path, depth, item in _walk(value):
        if depth > max_depth:
            raise UnsafeInputError(TOO_DEEP, code="json_too_deep", field=path or None)
        if isinstance(item, str) and has_forbidden_text(item):
            raise UnsafeInputError(NUL_OR_SURROGATE, code="invalid_characters", field=path or None)
        if isinstance(item, float) and not math.isfinite(item):
            raise UnsafeInputError(NOT_FINITE, code="number_out_of_range", field=path or None)


def printable(text: str) -> str:
    """``text`` with forbidden characters shown as ``\\uXXXX`` (safe to echo back as JSON)."""
    return FORBIDDEN_TEXT.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _walk(value: Any) -> Iterator[tuple[str, int, Any]]:
    stack: list[tuple[str, int, Any]] = [("", 0, value)]
    while stack:
        path, depth, item = stack.pop()
        yield path, depth, item
        if isinstance(item, dict):
            for key, child in item.items():
                key_text = str(key)
                shown = printable(key_text)
                child_path = f"{path}.{shown}" if path else shown
                if has_forbidden_text(key_text):
                    yield child_path, depth + 1, key_text
                stack.append((child_path, depth + 1, child))
        elif isinstance(item, list):
            for index, child in enumerate(item):
                stack.append((f"{path}[{index}]", depth + 1, child))
