"""An OpenAI Agents SDK session over SynthOrg Memory's conversations: :class:`SynthOrgSession`
(the SDK's ``Session`` protocol; ``pip install "./clients/python[agents]"``).

from synthorg_memory import AsyncMemoryClient
from synthorg_memory.agents import SynthOrgSession
session = SynthOrgSession("chat-42", AsyncMemoryClient(base_url=URL, api_key=KEY))

The session is the conversation ``session_id`` of the client's agent: ``Runner.run(agent,
input, session=session)`` reads it before a turn and flushes the turn's items to it, so
memories form from it in the background as from any conversation. ``pop_item`` removes the
last message (``DELETE …/messages/last``); ``clear_session`` deletes the conversation (the
memories formed stay).

An item ``{"role": "user"|"assistant"|"system", "content": "<text>"}`` is kept as that
conversation message; any other item (the model's output messages, function calls and their
outputs, reasoning) is kept whole as JSON under the name ``openai-agents:item`` (role
``assistant`` for the model's own items, else ``tool``) and read back as it was.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

try:
    from agents.memory.session_settings import SessionSettings, resolve_session_limit
except ImportError as exc:  # pragma: no cover - the optional extra is missing
    raise ImportError(
        'synthorg_memory.agents needs the OpenAI Agents SDK: pip install "synthorg-memory[agents]"'
    ) from exc

from synthorg_memory._client import AsyncMemoryClient, MemoryClient
from synthorg_memory._conversations import append, clear, pop, read
from synthorg_memory._plans import Plan, check_client, run_async, run_sync

__all__ = ["SynthOrgSession"]

#: the name of a conversation message that holds an item as JSON
MARKER = "openai-agents:item"
_PLAIN_ROLES = ("user", "assistant", "system")
#: items the model produced (kept with the role ``assistant``)
_MODEL_TYPES = ("message", "function_call", "reasoning", "computer_call", "file_search_call",
                "web_search_call", "code_interpreter_call", "image_generation_call",
                "local_shell_call", "mcp_call", "custom_tool_call")  # fmt: skip


def to_conversation(item: Any) -> dict[str, Any]:
    """The conversation message (``{"role", "content", "name"?}``) that keeps ``item``."""
    item = dict(item)
    if (
        set(item) == {"role", "content"}
        and item["role"] in _PLAIN_ROLES
        and isinstance(item["content"], str)
        and item["content"].strip()
    ):
        return {"role": item["role"], "content": item["content"]}
    role = item.get("role")
    if role not in _PLAIN_ROLES:
        role = "assistant" if item.get("type") in _MODEL_TYPES else "tool"
    return {"role": role, "content": json.dumps(item, ensure_ascii=False), "name": MARKER}


def from_conversation(message: Any) -> Any:
    """The item of a conversation message (any message of the conversation, also those
    flushed by other clients: ``{"role", "content"}``, a tool message as the user's)."""
    if message.name == MARKER:
        return json.loads(message.content)
    role = message.role if message.role in _PLAIN_ROLES else "user"
    return {"role": role, "content": message.content}


class SynthOrgSession:
    """The Agents SDK session ``session_id``: the conversation of that id of the client's
    agent (the SDK's ``Session`` protocol, which third-party sessions implement rather than
    subclassing its internal ``SessionABC``).

    ``client``: an :class:`~synthorg_memory.AsyncMemoryClient`, or a
    :class:`~synthorg_memory.MemoryClient` (its calls then run in a worker thread).
    ``session_settings``: the SDK's settings (``limit``: how many of the latest items
    ``get_items`` returns when it is not given one). ``conversation_session_id`` /
    ``project_id``: what an agent whose memory level is ``session`` / ``project`` must send
    with every flush.
    """

    def __init__(
        self,
        session_id: str,
        client: MemoryClient | AsyncMemoryClient,
        *,
        session_settings: SessionSettings | None = None,
        conversation_session_id: str | None = None,
        project_id: int | None = None,
    ) -> None:
        check_client(client)
        self.session_id = session_id
        self.client = client
        self.session_settings = session_settings or SessionSettings()
        self.binding = {"session_id": conversation_session_id, "project_id": project_id}

    async def _run(self, plan: Plan) -> Any:
        if isinstance(self.client, MemoryClient):
            return await asyncio.to_thread(run_sync, self.client, plan)
        return await run_async(self.client, plan)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        last = resolve_session_limit(limit, self.session_settings)
        messages = await self._run(read(self.session_id, last))
        return [from_conversation(message) for message in messages]

    async def add_items(self, items: list[Any]) -> None:
        if items:
            messages = [to_conversation(item) for item in items]
            await self._run(append(self.session_id, messages, **self.binding))

    async def pop_item(self) -> Any | None:
        message = await self._run(pop(self.session_id))
        return None if message is None else from_conversation(message)

    async def clear_session(self) -> None:
        await self._run(clear(self.session_id))
