"""LangGraph long-term memory in SynthOrg Memory: put, get, search and list namespaces through
``SynthOrgStore``, sync and async.

    pip install "./clients/python[langgraph]"
    SYNTHORG_URL=http://127.0.0.1:8000 SYNTHORG_API_KEY=sok_... python langgraph_store.py
"""

from __future__ import annotations

import asyncio
import os

from synthorg_memory import AsyncMemoryClient, MemoryClient
from synthorg_memory.langgraph import SynthOrgStore


def sync_flow(base_url: str, api_key: str) -> dict:
    """The store with a MemoryClient: a user's preferences and a team's notes."""
    with MemoryClient(base_url=base_url, api_key=api_key) as client:
        store = SynthOrgStore(client)
        store.put(("users", "u-42", "prefs"), "language", {"text": "Answer in French."})
        store.put(("users", "u-42", "prefs"), "units", {"text": "Use metric units."})
        store.put(("teams", "billing"), "deploys", {"text": "Billing deploys every Friday."})
        store.put(("users", "u-42", "prefs"), "units", {"text": "Use imperial units."})
        return {
            "get": store.get(("users", "u-42", "prefs"), "units"),
            "search": store.search(("users", "u-42"), query="which units of measure?"),
            "everything": store.search(()),
            "namespaces": store.list_namespaces(),
            "users": store.list_namespaces(prefix=("users",), max_depth=2),
        }


async def async_flow(base_url: str, api_key: str) -> dict:
    """The same store on an AsyncMemoryClient."""
    async with AsyncMemoryClient(base_url=base_url, api_key=api_key) as client:
        store = SynthOrgStore(client)
        await store.aput(("teams", "billing"), "oncall", {"text": "Ana is on call this week."})
        found = await store.asearch(("teams",), query="who is on call?", limit=1)
        await store.adelete(("teams", "billing"), "deploys")
        return {
            "search": found,
            "deleted": await store.aget(("teams", "billing"), "deploys"),
            "namespaces": await store.alist_namespaces(suffix=("billing",)),
        }


if __name__ == "__main__":
    url, key = os.environ["SYNTHORG_URL"], os.environ["SYNTHORG_API_KEY"]
    for name, value in sync_flow(url, key).items():
        print(name, value)
    for name, value in asyncio.run(async_flow(url, key)).items():
        print(name, value)
