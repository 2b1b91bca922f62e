"""A conversation as a list the frameworks' histories keep (plans, see ``_plans``): read it
(all, or the last ``n`` messages), append to it, remove its last message, clear it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from synthorg_memory._plans import Fetch, Plan
from synthorg_memory.errors import NotFoundError

#: the most messages one flush (and one page) holds
BATCH = 500


def read(conversation_id: str, last: int | None = None) -> Plan:
    """Its messages, oldest first (``last``: only the newest ``last`` of them); ``[]`` for
    a conversation that does not exist (yet)."""
    kwargs: dict[str, Any] = {"page_size": BATCH}
    try:
        if last is not None:
            if last <= 0:
                return []
            conversation = yield Fetch("conversations", "get", (conversation_id,))
            if conversation.message_count > last:
                kwargs["after_seq"] = conversation.message_count - last
        return (yield Fetch("conversations", "messages", (conversation_id,), kwargs, pages=True))
    except NotFoundError as missing:
        if missing.code == "conversation_not_found":
            return []
        raise


def append(
    conversation_id: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    session_id: str | None = None,
    project_id: int | None = None,
) -> Plan:
    binding = {"session_id": session_id, "project_id": project_id}
    for start in range(0, len(messages), BATCH):
        chunk = list(messages[start : start + BATCH])
        yield Fetch("conversations", "add_messages", (conversation_id, chunk), binding)


def pop(conversation_id: str) -> Plan:
    """The removed last message, or ``None`` when there is none."""
    try:
        return (yield Fetch("conversations", "pop_message", (conversation_id,)))
    except NotFoundError as missing:
        if missing.code in ("conversation_not_found", "conversation_empty"):
            return None
        raise


def clear(conversation_id: str) -> Plan:
    try:
        yield Fetch("conversations", "delete", (conversation_id,))
    except NotFoundError as missing:
        if missing.code != "conversation_not_found":
            raise
