"""``synthorg_memory.langgraph.SynthOrgStore`` (a LangGraph ``BaseStore``) against the real
server: the example's flow sync and async, then what the rows say, the near-duplicate gate,
the refusals, and that one agent's store never sees another's items."""

import asyncio
import json

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from memory.core.models.memory import Memory
from synthorg_memory import AsyncMemoryClient, MemoryClient
from synthorg_memory.langgraph import SynthOrgStore, key_tag
from tests.clients.examples import example
from tests.synthorg.test_mcp_server import committed, live_server_url  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def rows(agent):
    return {
        (row.namespace, row.source): row
        for row in Memory.objects.filter(agent=agent, superseded_at__isnull=True)
    }


def test_the_examples_round_trip_sync_and_async(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    flow = example("langgraph_store")
    out = flow.sync_flow(live_server_url, caller.raw_key)

    units = out["get"]
    assert isinstance(units, Item)
    assert (units.namespace, units.key, units.value) == (
        ("users", "u-42", "prefs"), "units", {"text": "Use imperial units."},
    )  # fmt: skip
    row = rows(caller.agent)[("users/u-42/prefs", "langgraph:units")]
    assert json.loads(row.content) == {"text": "Use imperial units."}
    assert row.tags == ["langgraph", key_tag("units")]
    assert (units.created_at, units.updated_at) == (row.created_at, row.updated_at)
    assert units.updated_at > units.created_at  # the second put rewrote the same memory
    assert len(rows(caller.agent)) == 3

    hits = out["search"]
    assert all(isinstance(hit, SearchItem) for hit in hits)
    assert [hit.key for hit in hits] == ["units", "language"]  # the prefix keeps teams out
    assert hits[0].score > hits[1].score >= 0
    assert {(i.namespace, i.key) for i in out["everything"]} == {
        (("users", "u-42", "prefs"), "language"),
        (("users", "u-42", "prefs"), "units"),
        (("teams", "billing"), "deploys"),
    }
    assert all(item.score is None for item in out["everything"])
    assert out["namespaces"] == [("teams", "billing"), ("users", "u-42", "prefs")]
    assert out["users"] == [("users", "u-42")]

    out = asyncio.run(flow.async_flow(live_server_url, caller.raw_key))
    (oncall,) = out["search"]
    assert (oncall.namespace, oncall.key, oncall.value) == (
        ("teams", "billing"), "oncall", {"text": "Ana is on call this week."},
    )  # fmt: skip
    assert out["deleted"] is None
    assert out["namespaces"] == [("teams", "billing")]
    assert set(rows(caller.agent)) == {
        ("users/u-42/prefs", "langgraph:language"),
        ("users/u-42/prefs", "langgraph:units"),
        ("teams/billing", "langgraph:oncall"),
    }


def test_batch_filters_and_the_agents_other_memories(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    committed.store(caller, "A memory the agent wrote itself, outside the store.")
    with MemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
        store = SynthOrgStore(client)
        assert isinstance(store, BaseStore)
        ns = ("docs",)
        store.put(ns, "a", {"kind": "runbook", "rank": 1, "text": "Restart the billing worker."})
        store.put(ns, "b", {"kind": "runbook", "rank": 5, "text": "Rotate the API keys."})
        store.put(ns, "c", {"kind": "faq", "rank": 3, "text": "Invoices go out monthly."})
        assert [i.key for i in store.search(ns, filter={"kind": "runbook"})] == ["b", "a"]
        assert [i.key for i in store.search(ns, filter={"rank": {"$gte": 3}})] == ["c", "b"]
        assert [i.key for i in store.search(ns, limit=1, offset=1)] == ["b"]
        hits = store.search(ns, query="billing worker restart", filter={"kind": "runbook"})
        assert hits[0].key == "a" and {h.key for h in hits} == {"a", "b"}
        assert store.get(("default",), "anything") is None
        assert store.list_namespaces() == [("docs",)]  # the agent's own memory is no item

        results = store.batch(
            [
                PutOp(ns, "d", {"kind": "faq", "rank": 2, "text": "Refunds take a week."}),
                GetOp(ns, "d"),
                PutOp(ns, "c", None),
                SearchOp(ns, filter={"kind": "faq"}),
                ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("docs",)),)),
            ]
        )
        assert results[0] is None and results[2] is None
        assert (results[1].key, results[1].value["rank"]) == ("d", 2)
        assert [item.key for item in results[3]] == ["d"]
        assert results[4] == [("docs",)]
        assert {row.source for row in Memory.objects.filter(agent=caller.agent)} == {
            "", "langgraph:a", "langgraph:b", "langgraph:d",
        }  # fmt: skip


def test_a_near_duplicate_value_under_a_new_key_is_its_own_item(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    with MemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
        store = SynthOrgStore(client)
        value = {"text": "The billing service deploys every Friday at noon UTC."}
        store.put(("notes",), "first", value)
        store.put(("notes",), "second", value)  # the API's gate would answer "first"
        assert store.get(("notes",), "first").value == value
        assert store.get(("notes",), "second").value == value
        stored = rows(caller.agent)
        assert set(stored) == {("notes", "langgraph:first"), ("notes", "langgraph:second")}
        assert [json.loads(row.content) for row in stored.values()] == [value, value]


def test_refusals(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    with MemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
        store = SynthOrgStore(client)
        with pytest.raises(InvalidNamespaceError):
            store.put(("a/b",), "k", {"x": 1})
        with pytest.raises(InvalidNamespaceError):
            store.put(("x" * 101,), "k", {"x": 1})
        with pytest.raises(ValueError, match="at most 190"):
            store.put(("a",), "k" * 191, {"x": 1})
        with pytest.raises(NotImplementedError):
            store.put(("a",), "k", {"x": 1}, index=["x"])
    assert not Memory.objects.filter(agent=caller.agent).exists()

    async def sync_call_on_async_client():
        async with AsyncMemoryClient(base_url=live_server_url, api_key=caller.raw_key) as c:
            with pytest.raises(TypeError, match="AsyncMemoryClient"):
                SynthOrgStore(c).get(("a",), "k")

    asyncio.run(sync_call_on_async_client())
    with pytest.raises(TypeError):
        SynthOrgStore(object())


def test_agents_do_not_see_each_others_items(live_server_url, committed):  # noqa: F811
    alice, bob = committed.agent(), committed.agent()
    with (
        MemoryClient(base_url=live_server_url, api_key=alice.raw_key) as a,
        MemoryClient(base_url=live_server_url, api_key=bob.raw_key) as b,
    ):
        SynthOrgStore(a).put(("shared-name",), "k", {"text": "Alice's secret plan."})
        theirs = SynthOrgStore(b)
        assert theirs.get(("shared-name",), "k") is None
        assert theirs.search(("shared-name",), query="secret plan") == []
        assert theirs.list_namespaces() == []
        theirs.put(("shared-name",), "k", {"text": "Bob's own."})
        theirs.delete(("shared-name",), "k")
    assert [json.loads(r.content) for r in Memory.objects.filter(agent=alice.agent)] == [
        {"text": "Alice's secret plan."}
    ]
    assert not Memory.objects.filter(agent=bob.agent).exists()
