"""LangGraph long-term memory over SynthOrg Memory: :class:`SynthOrgStore`, a LangGraph
``BaseStore`` (``pip install "./clients/python[langgraph]"``).

from synthorg_memory import MemoryClient
from synthorg_memory.langgraph import SynthOrgStore
store = SynthOrgStore(MemoryClient(base_url="http://127.0.0.1:8000", api_key=KEY))

How an item is kept: one private memory of the client's agent per ``(namespace, key)``.

* The LangGraph namespace ``("users", "u-42", "prefs")`` is the memory's namespace
  ``users/u-42/prefs`` (the flat form the API's namespace tuples render to); a label may not
  contain ``/`` and the joined name is at most 100 characters.
* The value is the memory's content, as JSON (what search embeds and ranks).
* The key is the tag ``lg-key:<sha256 of the key, 40 hex digits>`` (the lookup) and the
  source ``langgraph:<key>`` (read back; a key is at most 190 characters); every item also
  carries the tag ``langgraph``, which tells the store's memories from the agent's others.

A put of an existing key rewrites that memory's content (``PATCH``, re-embedded); a put of a
new key stores a memory. Should the API's near-duplicate gate answer with another memory
(a value close to one already in the namespace), the item is stored under a unique
placeholder text and then given its value, so two keys never share a memory.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # pragma: no cover - the optional extra is missing
    raise ImportError(
        'synthorg_memory.langgraph needs LangGraph: pip install "synthorg-memory[langgraph]"'
    ) from exc

from synthorg_memory._client import AsyncMemoryClient, MemoryClient
from synthorg_memory._plans import Fetch, Plan, check_client, run_async, run_sync

__all__ = ["SynthOrgStore"]

#: the tag every item of the store carries
STORE_TAG = "langgraph"
KEY_TAG_PREFIX = "lg-key:"
SOURCE_PREFIX = "langgraph:"
NAMESPACE_MAX_CHARS = 100
KEY_MAX_CHARS = 200 - len(SOURCE_PREFIX)
#: the most namespaces one search request filters by, and the most hits it returns
SEARCH_NAMESPACES_MAX = 50
SEARCH_LIMIT_MAX = 100
PAGE_SIZE = 100


def namespace_name(namespace: Sequence[str]) -> str:
    """The memory namespace of a LangGraph namespace (its labels joined with ``/``)."""
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in namespace:
        if not isinstance(label, str) or not label or "/" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {tuple(namespace)}: SynthOrgStore "
                "labels are non-empty strings without '/'."
            )
    name = "/".join(namespace)
    if len(name) > NAMESPACE_MAX_CHARS:
        raise InvalidNamespaceError(
            f"Namespace {tuple(namespace)} is {len(name)} characters joined with '/'; "
            f"SynthOrgStore namespaces are at most {NAMESPACE_MAX_CHARS}."
        )
    return name


def key_tag(key: str) -> str:
    return KEY_TAG_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not key:
        raise ValueError("A SynthOrgStore key is a non-empty string.")
    if len(key) > KEY_MAX_CHARS:
        raise ValueError(f"A SynthOrgStore key is at most {KEY_MAX_CHARS} characters.")


def _content(value: Mapping[str, Any]) -> str:
    return json.dumps(dict(value), ensure_ascii=False, sort_keys=True)


def _is_item(memory: Any) -> bool:
    return STORE_TAG in memory.tags and memory.source.startswith(SOURCE_PREFIX)


def _item(memory: Any, score: float | None = None, *, ranked: bool = False) -> Item:
    fields = {
        "namespace": tuple(memory.namespace.split("/")),
        "key": memory.source[len(SOURCE_PREFIX) :],
        "value": json.loads(memory.content),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
    }
    return SearchItem(**fields, score=score) if ranked else Item(**fields)


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(want == "*" or have == want for have, want in pairs)


def _compare(have: Any, want: Any) -> bool:
    """LangGraph's filter semantics: equality, nested objects, ``$eq/$ne/$gt/$gte/$lt/$lte``."""
    if isinstance(want, dict):
        if any(str(k).startswith("$") for k in want):
            return all(_operator(have, op, operand) for op, operand in want.items())
        return isinstance(have, dict) and all(_compare(have.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return (
            isinstance(have, (list, tuple))
            and len(have) == len(want)
            and all(_compare(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def _operator(have: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(have == operand)
    if op == "$ne":
        return bool(have != operand)
    if have is None:
        return False
    compare = {
        "$gt": lambda a, b: a > b,
        "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b,
        "$lte": lambda a, b: a <= b,
    }.get(op)
    if compare is None:
        raise ValueError(f"Unsupported filter operator: {op}")
    return bool(compare(float(have), float(operand)))


def _passes(value: Mapping[str, Any], filters: Mapping[str, Any] | None) -> bool:
    return not filters or all(_compare(value.get(k), v) for k, v in filters.items())


# --- the operations, as plans (one definition for the sync and the async client) -----------


def _find(name: str, key: str) -> Plan:
    """The memories holding ``key`` in namespace ``name``, newest first."""
    memories = yield Fetch(
        "memories",
        "list",
        kwargs={"namespace": name, "tags": [STORE_TAG, key_tag(key)], "page_size": PAGE_SIZE},
        pages=True,
    )
    return [memory for memory in memories if memory.source == SOURCE_PREFIX + key]


def _get(op: GetOp) -> Plan:
    _check_key(op.key)
    found = yield from _find(namespace_name(op.namespace), op.key)
    return _item(found[0]) if found else None


def _put(op: PutOp, category: str) -> Plan:
    _check_key(op.key)
    if op.index is not None:
        raise NotImplementedError(
            "SynthOrgStore indexes every value whole (its JSON); `index` is not supported."
        )
    if op.ttl is not None:
        raise NotImplementedError("SynthOrgStore does not support ttl.")
    name = namespace_name(op.namespace)
    found = yield from _find(name, op.key)
    if op.value is None:
        for memory in found:
            yield Fetch("memories", "delete", (memory.id,))
        return None
    content = _content(op.value)
    if found:
        yield Fetch("memories", "update", (found[0].id,), {"content": content})
        for extra in found[1:]:  # concurrent first puts of one key: keep the newest
            yield Fetch("memories", "delete", (extra.id,))
        return None
    members = {
        "category": category,
        "namespace": name,
        "tags": [STORE_TAG, key_tag(op.key)],
        "source": SOURCE_PREFIX + op.key,
    }
    stored = yield Fetch("memories", "store", kwargs={"content": content, **members})
    if stored is None:
        raise ValueError("The agent's memory level is 'none': SynthOrgStore cannot store.")
    if stored.deduplicated and stored.source != SOURCE_PREFIX + op.key:
        # The gate matched another memory: store a text nothing duplicates, then the value.
        placeholder = f"langgraph item {uuid.uuid4().hex}"
        stored = yield Fetch("memories", "store", kwargs={"content": placeholder, **members})
        try:
            yield Fetch("memories", "update", (stored.id,), {"content": content})
        except Exception:
            yield Fetch("memories", "delete", (stored.id,))
            raise
    return None


def _all_items() -> Plan:
    memories = yield Fetch(
        "memories", "list", kwargs={"tags": [STORE_TAG], "page_size": PAGE_SIZE}, pages=True
    )
    return [memory for memory in memories if _is_item(memory)]


def _namespaces(conditions: Iterable[MatchCondition]) -> Plan:
    memories = yield from _all_items()
    names = {tuple(memory.namespace.split("/")) for memory in memories}
    conditions = tuple(conditions)
    return sorted(name for name in names if all(_matches(c, name) for c in conditions))


def _search(op: SearchOp) -> Plan:
    prefix = tuple(op.namespace_prefix)
    if prefix:
        namespace_name(prefix)
    if not op.query:
        memories = yield from _all_items()
        items = [
            _item(memory, ranked=True)
            for memory in memories
            if tuple(memory.namespace.split("/"))[: len(prefix)] == prefix
        ]
        items = [item for item in items if _passes(item.value, op.filter)]
        return items[op.offset : op.offset + op.limit]
    names: list[str | None] = [None]
    if prefix:
        found = yield from _namespaces([MatchCondition("prefix", prefix)])
        names = ["/".join(name) for name in found]
    wanted = SEARCH_LIMIT_MAX if op.filter else min(SEARCH_LIMIT_MAX, op.offset + op.limit)
    hits = []
    for start in range(0, len(names), SEARCH_NAMESPACES_MAX):
        chunk = names[start : start + SEARCH_NAMESPACES_MAX]
        filters: dict[str, Any] = {"tags": [STORE_TAG], "min_relevance": 0.0}
        if chunk != [None]:
            filters["namespaces"] = chunk
        response = yield Fetch(
            "memories",
            "search",
            kwargs={"query": op.query, "limit": wanted, "include_shared": False, **filters},
        )
        hits.extend(hit for hit in response.results if _is_item(hit.memory))
    hits.sort(key=lambda hit: -hit.score)
    items = [_item(hit.memory, hit.score, ranked=True) for hit in hits]
    items = [item for item in items if _passes(item.value, op.filter)]
    return items[op.offset : op.offset + op.limit]


def _list_namespaces(op: ListNamespacesOp) -> Plan:
    found = yield from _namespaces(op.match_conditions or ())
    if op.max_depth is not None:
        found = sorted({name[: op.max_depth] for name in found})
    return found[op.offset : op.offset + op.limit]


class SynthOrgStore(BaseStore):
    """A LangGraph ``BaseStore`` over the private memories of the client's agent.

    ``client``: a :class:`~synthorg_memory.MemoryClient` (``batch`` and the sync methods;
    the async ones run it in a worker thread) or an
    :class:`~synthorg_memory.AsyncMemoryClient` (``abatch`` and the async methods only).
    ``category``: the memory category items are stored under.
    """

    def __init__(self, client: MemoryClient | AsyncMemoryClient, *, category: str = "semantic"):
        check_client(client)
        self.client = client
        self.category = category

    def _plan(self, op: Op) -> Plan:
        if isinstance(op, GetOp):
            return _get(op)
        if isinstance(op, PutOp):
            return _put(op, self.category)
        if isinstance(op, SearchOp):
            return _search(op)
        if isinstance(op, ListNamespacesOp):
            return _list_namespaces(op)
        raise ValueError(f"Unknown operation type: {type(op).__name__}")

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if not isinstance(self.client, MemoryClient):
            raise TypeError(
                "This SynthOrgStore has an AsyncMemoryClient: use the async methods "
                "(abatch, aget, aput, asearch, …) or give it a MemoryClient."
            )
        return [run_sync(self.client, self._plan(op)) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if isinstance(self.client, MemoryClient):
            return await asyncio.to_thread(self.batch, list(ops))
        return [await run_async(self.client, self._plan(op)) for op in ops]
