"""LangChain chat history over SynthOrg Memory's conversations:
:class:`SynthOrgChatMessageHistory`, a ``BaseChatMessageHistory``
(``pip install "./clients/python[langchain]"``).

from synthorg_memory import MemoryClient
from synthorg_memory.langchain import SynthOrgChatMessageHistory
history = SynthOrgChatMessageHistory(MemoryClient(base_url=URL, api_key=KEY), "chat-42")

The history is the conversation ``conversation_id`` of the client's agent: messages are
flushed to it (so memories form from them in the background, as from any conversation),
read back oldest first, and ``clear()`` deletes the conversation (the memories formed stay).

A message with text content and no tool calls is kept as the conversation message it is
(``human`` → ``user``, ``ai`` → ``assistant``, ``system``; its ``name`` kept); LangChain's
``id``, ``response_metadata`` and ``usage_metadata`` are not kept. Any other message (tool
calls, a tool result, content blocks, empty text) is kept whole as LangChain's JSON
(``message_to_dict``) under the name ``langchain:message``, and read back as it was.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        HumanMessage,
        SystemMessage,
        message_to_dict,
        messages_from_dict,
    )
except ImportError as exc:  # pragma: no cover - the optional extra is missing
    raise ImportError(
        'synthorg_memory.langchain needs LangChain: pip install "synthorg-memory[langchain]"'
    ) from exc

from synthorg_memory._client import AsyncMemoryClient, MemoryClient
from synthorg_memory._conversations import append, clear, read
from synthorg_memory._plans import Plan, check_client, run_async, run_sync

__all__ = ["SynthOrgChatMessageHistory"]

#: the name of a conversation message that holds a LangChain message as JSON
MARKER = "langchain:message"
_ROLES = {"human": "user", "ai": "assistant", "system": "system"}
_CLASSES = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}


def to_conversation(message: BaseMessage) -> dict[str, Any]:
    """The conversation message (``{"role", "content", "name"?}``) that keeps ``message``."""
    role = _ROLES.get(message.type)
    plain = (
        role is not None
        and isinstance(message.content, str)
        and message.content.strip()
        and not message.additional_kwargs
        and not getattr(message, "tool_calls", None)
        and not getattr(message, "invalid_tool_calls", None)
        and message.name != MARKER
    )
    if plain:
        out = {"role": role, "content": message.content}
        if message.name:
            out["name"] = message.name
        return out
    return {
        "role": role or "tool",
        "content": json.dumps(message_to_dict(message), ensure_ascii=False),
        "name": MARKER,
    }


def from_conversation(message: Any) -> BaseMessage:
    """The LangChain message of a conversation message (any message of the conversation,
    also those flushed by other clients)."""
    if message.name == MARKER:
        return messages_from_dict([json.loads(message.content)])[0]
    name = message.name or None
    cls = _CLASSES.get(message.role)
    if cls is None:  # a tool message flushed by another client: no tool_call_id to give
        return ChatMessage(role=message.role, content=message.content, name=name)
    return cls(content=message.content, name=name)


class SynthOrgChatMessageHistory(BaseChatMessageHistory):
    """The chat history of the conversation ``conversation_id`` of the client's agent.

    ``client``: a :class:`~synthorg_memory.MemoryClient` (the sync methods; the async ones
    run them in a worker thread) or an :class:`~synthorg_memory.AsyncMemoryClient`
    (``aget_messages``, ``aadd_messages``, ``aclear`` only). ``session_id`` /
    ``project_id``: what an agent whose memory level is ``session`` / ``project`` must
    send with every flush.
    """

    def __init__(
        self,
        client: MemoryClient | AsyncMemoryClient,
        conversation_id: str,
        *,
        session_id: str | None = None,
        project_id: int | None = None,
    ) -> None:
        check_client(client)
        self.client = client
        self.conversation_id = conversation_id
        self.binding = {"session_id": session_id, "project_id": project_id}

    def _sync(self, plan: Plan) -> Any:
        if not isinstance(self.client, MemoryClient):
            raise TypeError(
                "This history has an AsyncMemoryClient: use aget_messages, aadd_messages "
                "and aclear, or give it a MemoryClient."
            )
        return run_sync(self.client, plan)

    async def _async(self, plan: Plan) -> Any:
        if isinstance(self.client, MemoryClient):
            return await asyncio.to_thread(run_sync, self.client, plan)
        return await run_async(self.client, plan)

    def _read(self) -> Plan:
        messages = yield from read(self.conversation_id)
        return [from_conversation(message) for message in messages]

    def _append(self, messages: Sequence[BaseMessage]) -> Plan:
        return append(
            self.conversation_id, [to_conversation(message) for message in messages], **self.binding
        )

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return self._sync(self._read())

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        self._sync(self._append(messages))

    def clear(self) -> None:
        self._sync(clear(self.conversation_id))

    async def aget_messages(self) -> list[BaseMessage]:
        return await self._async(self._read())

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await self._async(self._append(messages))

    async def aclear(self) -> None:
        await self._async(clear(self.conversation_id))
