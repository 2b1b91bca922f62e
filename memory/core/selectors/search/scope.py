"""The rows a search may return: scope parts (whose rows) and filters (which of them).

A scope is one or more parts (the agent's private rows; the company's shared rows), each a
SQL condition on ``m`` (``memory_memory``). Filters apply to every part: liveness (not
superseded, not expired at ``now``) and the query's metadata filters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.core.retrieval.query import MemoryQuery


@dataclass(frozen=True)
class Part:
    """One part of the scope: a SQL condition on ``m`` and its parameters."""

    sql: str
    params: tuple
    #: the part's rows are shared ones (its SQL says ``m.is_shared``; a private part says
    #: ``NOT m.is_shared``): which of the embedder's two HNSW indexes it walks
    shared: bool = False
    #: filters only: nothing but liveness (the BM25 scope statistics can be read from
    #: ``memory_bm25_scope_stats`` instead of scanning the scope)
    live_only: bool = False
    #: the same condition (same parameters) written so that no index serves it: a filter
    #: on rows another index found (the sparse leg over a large scope, :mod:`.sparse`)
    filter_sql: str | None = None

    def as_filter(self) -> Part:
        """This part with its condition written as :attr:`filter_sql` (itself if none)."""
        if self.filter_sql is None:
            return self
        return Part(self.filter_sql, self.params, shared=self.shared, live_only=self.live_only)


# ``+ 0``: the same comparison, on an expression no b-tree indexes.
def private_part(company_id: int, agent_id: int) -> Part:
    """The agent's private rows."""
    condition = "m.company_id{0} = %s AND m.agent_id{0} = %s AND NOT m.is_shared"
    return Part(condition.format(""), (company_id, agent_id), filter_sql=condition.format(" + 0"))


def shared_part(company_id: int, *, exclude_agent_id: int | None = None) -> Part:
    """The company's shared rows (but ``exclude_agent_id``'s)."""
    condition = "m.company_id{0} = %s AND m.is_shared"
    params: tuple = (company_id,)
    if exclude_agent_id is not None:
        condition += " AND m.agent_id <> %s"
        params += (exclude_agent_id,)
    return Part(condition.format(""), params, shared=True, filter_sql=condition.format(" + 0"))


def scope_filters(query: MemoryQuery, now: datetime) -> Part:
    """Liveness at ``now`` and the query's metadata filters, as one condition on ``m``."""
    clauses = ["m.superseded_at IS NULL", "(m.expires_at IS NULL OR m.expires_at > %s)"]
    params: list = [now]
    filtered = False
    if query.namespaces:
        filtered = True
        clauses.append("m.namespace = ANY(%s)")
        params.append(list(query.namespaces))
    if query.categories:
        filtered = True
        clauses.append("m.category = ANY(%s)")
        params.append([c.value for c in query.categories])
    if query.tags:
        filtered = True
        clauses.append("m.tags @> %s::varchar(64)[]")
        params.append(list(query.tags))
    if query.subject is not None:
        clauses.append("m.subject = %s")
        params.append(query.subject)
    if query.since is not None:
        filtered = True
        clauses.append("m.created_at >= %s")
        params.append(query.since)
    if query.until is not None:
        filtered = True
        clauses.append("m.created_at < %s")
        params.append(query.until)
    # Task-scoped working memory is read only by a query naming its task. Not a metadata
    # filter for the BM25 statistics (``live_only``): the scope's totals still count the
    # agent's live task-scoped rows, a few short-lived notes beside its whole store.
    if query.task_id is None:
        clauses.append("m.task_id IS NULL")
    else:
        clauses.append("(m.task_id IS NULL OR m.task_id = %s)")
        params.append(query.task_id)
    return Part(" AND ".join(clauses), tuple(params), live_only=not filtered)


def union_sql(parts: Sequence[Part]) -> tuple[str, list]:
    """The parts OR-ed into one condition, and its parameters."""
    return (
        " OR ".join(f"({part.sql})" for part in parts),
        [p for part in parts for p in part.params],
    )
