"""LangChain chat history in a SynthOrg Memory conversation: append, read back, clear.

pip install "./clients/python[langchain]"
SYNTHORG_URL=http://127.0.0.1:8000 SYNTHORG_API_KEY=sok_... python langchain_history.py
"""

from __future__ import annotations

import asyncio
import os

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from synthorg_memory import AsyncMemoryClient, MemoryClient
from synthorg_memory.langchain import SynthOrgChatMessageHistory


def sync_flow(base_url: str, api_key: str, conversation_id: str = "support-7") -> dict:
    with MemoryClient(base_url=base_url, api_key=api_key) as client:
        history = SynthOrgChatMessageHistory(client, conversation_id)
        history.add_messages(
            [
                SystemMessage("You are the billing team's assistant."),
                HumanMessage("When does billing deploy?", name="ana"),
                AIMessage(
                    "",
                    tool_calls=[{"name": "calendar", "args": {"team": "billing"}, "id": "c1"}],
                ),
                ToolMessage("Fridays 12:00 UTC", tool_call_id="c1"),
            ]
        )
        history.add_ai_message("Billing deploys every Friday at noon UTC.")
        read_back = history.messages
        history.clear()
        return {"read_back": read_back, "after_clear": history.messages}


async def async_flow(base_url: str, api_key: str, conversation_id: str = "support-8") -> dict:
    async with AsyncMemoryClient(base_url=base_url, api_key=api_key) as client:
        history = SynthOrgChatMessageHistory(client, conversation_id)
        await history.aadd_messages([HumanMessage("Remind me: who is on call?")])
        await history.aadd_messages([AIMessage("Ana is on call this week.")])
        return {"read_back": await history.aget_messages()}


if __name__ == "__main__":
    url, key = os.environ["SYNTHORG_URL"], os.environ["SYNTHORG_API_KEY"]
    for message in sync_flow(url, key)["read_back"]:
        print(message.type, repr(message.content))
    for message in asyncio.run(async_flow(url, key))["read_back"]:
        print(message.type, repr(message.content))
