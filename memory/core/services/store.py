"""Storing memories: level binding, the write gate, batched embedding and supersession.

``memory_store_batch`` is the one write path (``memory_store`` is a batch of one; shared
knowledge is published through it with ``shared=True``). A batch is one transaction, one
embedder call and one audit entry. Which level a memory is written under is decided by the
agent's ``memory_level``:

* ``none`` — nothing is stored; every result says ``stored=False`` (not an error);
* ``session`` — the request must carry a ``session_id``; purged when the session ends, and
  in any case expires ``memory.options.session_ttl_hours`` after it is written (its
  ``expires_at`` is bounded by :func:`session_expiry`; maintenance archives it then);
* ``project`` — the request must name an open project of the agent's company; purged when
  the project closes;
* ``persistent`` — kept until retention removes it.

Whatever the level, a ``working`` memory may name a live ``task_id`` of the agent's company:
it is then read only by searches and contexts naming that task, and archived when the task
ends (:func:`memories_archive_task`, registered on ``on_task_ended``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

import numpy as np
from django.db import connection, transaction
from django.utils import timezone
from pgvector.psycopg import register_vector

from memory.core.domain import MAX_BATCH, MemoryStoreRequest, StoreResult
from memory.core.errors import MemoryNotFoundError, MemoryStoreConflictError, MemoryStoreError
from memory.core.models.memory import Memory
from memory.core.services.chunks import chunking_for, chunks_insert, flat_texts, windows_for
from memory.core.services.embeddings import embed_texts
from memory.core.services.events import MEMORY_CREATED, memory_events_record
from memory.core.write_gate import DUPLICATE_THRESHOLD, Candidate, best_duplicate, probe_terms
from persistence.audit_actions import AuditAction
from persistence.models import Agent, Project, Task
from persistence.selectors.config import company_config
from persistence.services.audit import audit_record
from synthorg.company_config.memory import MemoryChunkingConfig
from synthorg.db.prepared import execute_prepared
from synthorg.embedding import Embedder
from synthorg.enums import MemoryCategory, MemoryLevel

BATCH_EMPTY = "A batch must contain at least one memory."
BATCH_TOO_LARGE = f"A batch holds at most {MAX_BATCH} memories."
SESSION_ID_REQUIRED = "This agent's memory level is 'session': session_id is required."
PROJECT_ID_REQUIRED = "This agent's memory level is 'project': project_id is required."
PROJECT_UNKNOWN = "No project with this id exists in the agent's company."
PROJECT_CLOSED = "The project is closed; it no longer accepts memories."
EXPIRES_IN_PAST = "expires_at must be in the future."
CREATED_IN_FUTURE = "created_at may only be in the past (it is for importing old memories)."
SUPERSEDED_UNKNOWN = "No memory of this agent with this id can be superseded."
ALREADY_SUPERSEDED = "The memory is already superseded."
TASK_UNKNOWN = "No task with this id exists in the agent's company."
TASK_ENDED = "The task has ended; it no longer accepts memories."
TASK_NEEDS_WORKING = "Only working memory (category 'working') can be scoped to a task."
TASK_NOT_SHARED = "Shared knowledge cannot be scoped to a task."
SUPERSEDES_SHARED_MISMATCH = "Shared knowledge can only supersede shared knowledge, and vice versa."

NOT_STORED = StoreResult(id=None, stored=False, deduplicated=False, embedding_status=None)

#: The audit action of a store batch (shared knowledge: ``memory.shared_published``, recorded
#: by :func:`memory.core.services.shared.shared_publish`).
STORED_ACTION = AuditAction.MEMORY_STORED


@dataclass(frozen=True)
class StoreEmbeddings:
    """Vectors computed ahead of a store, keyed by the window texts they embed
    (:func:`memory.core.services.chunks.windows_for`). Empty when the embedder failed."""

    embedder_id: str = ""
    by_text: dict[str, np.ndarray] = field(default_factory=dict)
    chunking: MemoryChunkingConfig | None = None

    def vectors(self, request: MemoryStoreRequest) -> list[np.ndarray] | None:
        """The request's window vectors, first window first (``None``: not all embedded)."""
        if self.chunking is None:
            return None
        windows = windows_for(request.content, request.context, self.chunking)
        if not all(text in self.by_text for text in windows):
            return None
        return [self.by_text[text] for text in windows]


def memory_store_embed(
    *,
    agent: Agent,
    requests: Sequence[MemoryStoreRequest],
    embedder: Embedder | None = None,
) -> StoreEmbeddings:
    """Embed ``requests`` (every window of each) in one embedder call, for a later
    :func:`memory_store_batch`.

    A caller that must hold locks around the store (a restore, a consolidation) calls this
    *before* taking them and passes the result as ``embeddings``: the embedder may be slow or
    remote, and must not run while other writers wait. Vectors are keyed by text, so a
    request whose text changed meanwhile simply finds none and is stored ``pending``.
    """
    chunking = chunking_for(agent.company)
    texts = flat_texts(windows_for(r.content, r.context, chunking) for r in requests)
    embedded = embed_texts(company=agent.company, texts=texts, embedder=embedder)
    if embedded.vectors is None:
        return StoreEmbeddings()
    return StoreEmbeddings(
        embedder_id=embedded.embedder_id,
        by_text=dict(zip(texts, embedded.vectors, strict=True)),
        chunking=chunking,
    )


def memory_store(
    *,
    agent: Agent,
    request: MemoryStoreRequest,
    principal=None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
    persistent: bool = False,
) -> StoreResult:
    """Store one memory for ``agent``; see :func:`memory_store_batch`."""
    return memory_store_batch(
        agent=agent,
        requests=[request],
        principal=principal,
        embedder=embedder,
        now=now,
        persistent=persistent,
    )[0]


def memory_store_batch(
    *,
    agent: Agent,
    requests: Sequence[MemoryStoreRequest],
    principal=None,
    embedder: Embedder | None = None,
    now: datetime | None = None,
    shared: bool = False,
    deduplicate: bool = True,
    persistent: bool = False,
    embeddings: StoreEmbeddings | None = None,
    audit: bool = True,
    event: str | None = MEMORY_CREATED,
) -> list[StoreResult]:
    """Store up to 500 memories for ``agent`` in one transaction; results in request order.

    A request whose content nearly duplicates a live memory of the same agent, namespace and
    category (Dice ≥ 0.8 over normalised terms, see :mod:`memory.core.write_gate`) — or an earlier
    request of the same batch — stores nothing and returns that memory's id with
    ``deduplicated=True``. ``supersedes`` marks the named memories superseded by the result.
    If the embedder fails, rows are stored with ``embedding_status="pending"``.

    All or nothing: a rejected request (unknown or closed project, a ``supersedes`` that cannot
    be superseded) leaves nothing written. Inside the one transaction, in this order:

    1. a first pass of the gate, which only reads, finds the duplicates, so that
    2. the embedder embeds the other requests in one call — before any row or advisory lock
       is taken, so a slow embedder holds up no other writer of the agent (unless
       ``embeddings`` were computed ahead by :func:`memory_store_embed`);
    3. the project and superseded rows are locked, and concurrent stores into the same
       agent/namespace/category serialise on an advisory lock;
    4. the gate runs again if the store may have changed since step 1 (a write to the same
       agent/namespace/category moved its change counter in between), the rows are written,
       supersessions applied, and — if anything was written and ``audit`` — one
       ``memory.stored`` audit entry records ``principal``, the agent and the stored ids
       (never the content: the ledger is append-only and erasure must forget content).

    ``audit=False`` is for callers that record their own, more specific entry for the same
    write in the same transaction (a shared publication, an archive restore). A caller that
    already holds locks must pass ``embeddings`` computed before it took them.

    Each written row is a ``memory.created`` event for the company's webhook
    (:mod:`memory.core.services.events`), recorded in the same transaction and sent after
    commit; ``event=None`` is for a caller that records its own event for the rows (an
    archive restore: ``memory.restored``).
    """
    if not requests:
        raise MemoryStoreError(BATCH_EMPTY, code="batch_empty")
    if len(requests) > MAX_BATCH:
        raise MemoryStoreError(BATCH_TOO_LARGE, code="batch_too_large")
    level = MemoryLevel.PERSISTENT if shared else MemoryLevel(agent.memory_level)
    if level is MemoryLevel.NONE:
        return [NOT_STORED for _ in requests]
    if persistent:  # long-term knowledge (procedural lessons) outlives sessions and projects
        level = MemoryLevel.PERSISTENT
    now = now or timezone.now()
    batch = len(requests) > 1
    _check_requests(requests, level=level, now=now, batch=batch, shared=shared)
    with transaction.atomic():
        terms = _terms([r.content for r in requests])
        first_pass: _FirstPass | None = None
        if embeddings is None:
            duplicates: set[int] = set()
            if deduplicate:
                probe = [
                    _Slot(index=i, request=r, terms=t)
                    for i, (r, t) in enumerate(zip(requests, terms, strict=True))
                ]
                # read before the gate's statement (an earlier snapshot): a write the gate
                # sees but this misses makes the versions differ, never the other way round
                version = _gate_version(agent, requests)
                _gate(agent, probe, level=level, shared=shared, now=now)
                duplicates = {slot.index for slot in probe if slot.deduplicated}
                first_pass = _FirstPass(version=version, slots=probe)
            embeddings = memory_store_embed(
                agent=agent,
                requests=[r for i, r in enumerate(requests) if i not in duplicates],
                embedder=embedder,
            )
        return _store(
            agent=agent,
            requests=requests,
            terms=terms,
            level=level,
            embeddings=embeddings,
            now=now,
            shared=shared,
            deduplicate=deduplicate,
            batch=batch,
            principal=principal,
            audit=audit,
            event=event,
            first_pass=first_pass,
        )


def session_expiry(company, *, now: datetime, requested: datetime | None) -> datetime:
    """When a session-level memory written (or updated) at ``now`` expires: the caller's
    ``requested`` expiry, but never later than ``memory.options.session_ttl_hours`` from
    ``now`` — a session the agent never ends does not keep its memories forever."""
    ttl = timedelta(hours=company_config(company).memory.options.session_ttl_hours)
    bound = now + ttl
    return bound if requested is None or requested > bound else requested


def _field(index: int, name: str, batch: bool) -> str:
    return f"[{index}].{name}" if batch else name


def _invalid(message: str, *, code: str, field: str, cls=MemoryStoreError):
    return cls(message, code=code, errors=[{"field": field, "message": message, "code": code}])


def _check_requests(
    requests, *, level: MemoryLevel, now: datetime, batch: bool, shared: bool
) -> None:
    for index, request in enumerate(requests):
        if request.task_id is not None:
            field = _field(index, "task_id", batch)
            if shared:
                raise _invalid(TASK_NOT_SHARED, code="task_scope_not_shared", field=field)
            if request.category is not MemoryCategory.WORKING:
                raise _invalid(TASK_NEEDS_WORKING, code="task_scope_needs_working", field=field)
        if request.expires_at is not None and request.expires_at <= now:
            raise _invalid(
                EXPIRES_IN_PAST, code="expires_in_past", field=_field(index, "expires_at", batch)
            )
        if request.created_at is not None and request.created_at > now:
            raise _invalid(
                CREATED_IN_FUTURE,
                code="created_in_future",
                field=_field(index, "created_at", batch),
            )
        if level is MemoryLevel.SESSION and not request.session_id:
            raise _invalid(
                SESSION_ID_REQUIRED,
                code="session_id_required",
                field=_field(index, "session_id", batch),
            )
        if level is MemoryLevel.PROJECT and request.project_id is None:
            raise _invalid(
                PROJECT_ID_REQUIRED,
                code="project_id_required",
                field=_field(index, "project_id", batch),
            )


@dataclass
class _Slot:
    """One request on its way through the gate."""

    index: int
    request: MemoryStoreRequest
    terms: frozenset[str]
    result_id: UUID | None = None
    deduplicated: bool = False
    status: str | None = None
    twin: int | None = None  # index of an earlier slot of the batch this one duplicates

    @property
    def binding(self) -> tuple[str, int | None]:
        return (self.request.session_id or "", self.request.project_id)


@dataclass(frozen=True)
class _FirstPass:
    """What the gate's first pass found, and the groups' change counter it read."""

    version: int
    slots: list[_Slot]


def _store(
    *,
    agent: Agent,
    requests: Sequence[MemoryStoreRequest],
    terms: Sequence[frozenset[str]],
    level: MemoryLevel,
    embeddings: StoreEmbeddings,
    now: datetime,
    shared: bool,
    deduplicate: bool,
    batch: bool,
    principal,
    audit: bool,
    event: str | None,
    first_pass: _FirstPass | None = None,
) -> list[StoreResult]:
    """Steps 3 and 4 of :func:`memory_store_batch` (inside its transaction).

    The gate's second pass is skipped when ``first_pass`` read the same change counter of
    the batch's groups as the one read under their locks: nothing was committed to them in
    between, so the first pass's answer stands.
    """
    projects = _lock_projects(agent, requests, batch=batch) if level is MemoryLevel.PROJECT else {}
    tasks = _lock_tasks(agent, requests, batch=batch)
    superseded = _lock_superseded(agent, requests, shared=shared, now=now, batch=batch)
    slots = [
        _Slot(index=i, request=r, terms=t)
        for i, (r, t) in enumerate(zip(requests, terms, strict=True))
    ]
    if deduplicate:
        _serialise_writers(agent, requests)
        if first_pass is not None and _gate_version(agent, requests) == first_pass.version:
            slots = first_pass.slots
        else:
            _gate(agent, slots, level=level, shared=shared, now=now)

    session_bound = (
        session_expiry(agent.company, now=now, requested=None)
        if level is MemoryLevel.SESSION
        else None
    )
    rows = []
    chunks: list[tuple] = []
    for slot in slots:
        if slot.result_id is not None or slot.twin is not None:
            continue
        request = slot.request
        # No vector: the embedder failed, or the first gate pass took this request for a
        # duplicate of a memory that is gone now. The backfill task embeds it later (the
        # embedder is never called under the locks taken above).
        vectors = embeddings.vectors(request)
        vector = vectors[0] if vectors else None
        row = Memory(
            company_id=agent.company_id,
            agent=agent,
            namespace=request.namespace,
            category=request.category.value,
            content=request.content,
            context=request.context,
            source=request.source,
            confidence=request.confidence,
            tags=list(request.tags),
            subject=request.subject or "",
            is_shared=shared,
            level=level.value,
            # _check_requests holds: a session-level request names its session, a project-level
            # one its (locked) project
            session_id=(request.session_id or "") if level is MemoryLevel.SESSION else "",
            project=(
                projects.get(request.project_id)
                if level is MemoryLevel.PROJECT and request.project_id is not None
                else None
            ),
            task=tasks.get(request.task_id) if request.task_id is not None else None,
            created_at=request.created_at or now,
            updated_at=now,
            expires_at=(
                request.expires_at
                if session_bound is None
                else min(session_bound, request.expires_at or session_bound)
            ),
            embedding=vector,
            chunk_count=len(vectors) - 1 if vectors else 0,
            embedder_id=embeddings.embedder_id if vector is not None else "",
            embedding_status=(
                Memory.EmbeddingStatus.READY
                if vector is not None
                else Memory.EmbeddingStatus.PENDING
            ),
        )
        rows.append(row)
        chunks += [(row.id, n, v) for n, v in enumerate(vectors[1:] if vectors else (), start=1)]
        slot.result_id = row.id
        slot.status = row.embedding_status
    _insert(rows)
    chunks_insert(agent.company_id, chunks, embeddings.embedder_id)
    for slot in slots:
        if slot.twin is not None:
            slot.result_id, slot.status = slots[slot.twin].result_id, slots[slot.twin].status

    superseded_ids: list[UUID] = []
    for slot in slots:
        targets = [superseded[mid] for mid in slot.request.supersedes if mid != slot.result_id]
        if targets:
            Memory.objects.filter(pk__in=[m.pk for m in targets]).update(
                superseded_at=now, superseded_by_id=slot.result_id, updated_at=now
            )
            superseded_ids.extend(m.pk for m in targets)
    if audit and (rows or superseded_ids):
        _audit_batch(
            agent,
            principal=principal,
            stored=[row.pk for row in rows],
            deduplicated=sum(slot.deduplicated for slot in slots),
            superseded=superseded_ids,
            level=level,
            shared=shared,
        )
    if event is not None and rows:
        written = {row.pk for row in rows}
        # a row that supersedes others names them (they are marked, not changed otherwise)
        supersedes = {
            slot.result_id: {"supersedes": [str(m) for m in slot.request.supersedes]}
            for slot in slots
            if slot.result_id in written and slot.twin is None
        }
        memory_events_record(
            company_id=agent.company_id, event=event, memories=rows, extra=supersedes, now=now
        )
    return [
        StoreResult(
            id=slot.result_id,
            stored=True,
            deduplicated=slot.deduplicated,
            embedding_status=slot.status,
        )
        for slot in slots
    ]


def _audit_batch(
    agent: Agent,
    *,
    principal,
    stored: list[UUID],
    deduplicated: int,
    superseded: list[UUID],
    level: MemoryLevel,
    shared: bool,
) -> None:
    """One entry per batch, however large (a LoCoMo ingest writes 500 memories a batch)."""
    audit_record(
        company=agent.company,
        principal=principal,
        actor_agent=None if principal is not None else agent,
        action_type=STORED_ACTION,
        target_type="agent",
        target_id=agent.pk,
        details={
            "agent_id": agent.pk,
            "memory_ids": [str(pk) for pk in stored],
            "deduplicated": deduplicated,
            "superseded_ids": [str(pk) for pk in superseded],
            "level": level.value,
            "is_shared": shared,
        },
    )


#: The columns a store writes: all but the trigger-maintained search_vector and doc_length.
_INSERT_FIELDS = tuple(
    f for f in Memory._meta.concrete_fields if f.attname not in ("search_vector", "doc_length")
)
#: Django's column types → the type names binary COPY is told (no length modifiers).
_COPY_TYPE_ALIASES = {
    "timestamp with time zone": "timestamptz",
    "double precision": "float8",
    "integer": "int4",
    "bigint": "int8",
    "smallint": "int2",
    "boolean": "bool",
}


def _copy_type(field) -> str:
    db_type = re.sub(r"\(\d+(,\s*\d+)?\)", "", field.db_type(connection))
    return _COPY_TYPE_ALIASES.get(db_type, db_type)


def _insert(rows: list[Memory]) -> None:
    """Write ``rows`` with one binary ``COPY``: the vectors go over the wire as binary
    float4s. ``bulk_create`` formatted every vector as text in Python and compiled a
    20 × N-parameter INSERT, a large part of a store with a constant embedder (measured:
    docs/benchmarks/operations.md#write-path). The database runs the same
    triggers, constraints and index updates as for an INSERT."""
    if not rows:
        return
    connection.ensure_connection()
    raw = connection.connection
    if raw.adapters.types.get("vector") is None:
        register_vector(raw)
    columns = ", ".join(f'"{f.column}"' for f in _INSERT_FIELDS)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(
            f"COPY memory_memory ({columns}) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy,
    ):
        copy.set_types([_copy_type(f) for f in _INSERT_FIELDS])
        for row in rows:
            copy.write_row(
                [
                    row.embedding
                    if f.attname == "embedding"
                    else f.get_db_prep_save(getattr(row, f.attname), connection)
                    for f in _INSERT_FIELDS
                ]
            )
    for row in rows:
        row._state.adding, row._state.db = False, connection.alias


def _lock_projects(agent: Agent, requests, *, batch: bool) -> dict[int, Project]:
    wanted = {r.project_id for r in requests}
    # FOR NO KEY UPDATE conflicts with project_close's FOR UPDATE: a project cannot close
    # between this check and our commit (and so leave memories behind its purge).
    projects = {
        p.pk: p
        for p in Project.objects.select_for_update(no_key=True).filter(
            company_id=agent.company_id, pk__in=wanted
        )
    }
    for index, request in enumerate(requests):
        project = projects.get(request.project_id)
        field = _field(index, "project_id", batch)
        if project is None:
            raise _invalid(PROJECT_UNKNOWN, code="project_not_found", field=field)
        if project.is_closed:
            raise _invalid(
                PROJECT_CLOSED, code="project_closed", field=field, cls=MemoryStoreConflictError
            )
    return projects


def _lock_tasks(agent: Agent, requests, *, batch: bool) -> dict[int, Task]:
    wanted = {r.task_id for r in requests if r.task_id is not None}
    if not wanted:
        return {}
    # FOR NO KEY UPDATE conflicts with task_update's FOR UPDATE: a task cannot end between
    # this check and our commit (and so leave working memories behind its archiving).
    tasks = {
        t.pk: t
        for t in Task.objects.select_for_update(no_key=True).filter(
            company_id=agent.company_id, pk__in=wanted
        )
    }
    for index, request in enumerate(requests):
        if request.task_id is None:
            continue
        task = tasks.get(request.task_id)
        field = _field(index, "task_id", batch)
        if task is None:
            raise _invalid(TASK_UNKNOWN, code="task_not_found", field=field)
        if task.status in Task.TERMINAL_STATUSES:
            raise _invalid(TASK_ENDED, code="task_ended", field=field, cls=MemoryStoreConflictError)
    return tasks


def _lock_superseded(agent: Agent, requests, *, shared: bool, now: datetime, batch: bool):
    wanted = {mid for r in requests for mid in r.supersedes}
    if not wanted:
        return {}
    found = {
        m.pk: m
        for m in Memory.objects.select_for_update().filter(agent=agent, pk__in=wanted)
        if m.expires_at is None or m.expires_at > now
    }
    for index, request in enumerate(requests):
        for position, mid in enumerate(request.supersedes):
            field = _field(index, f"supersedes.{position}", batch)
            memory = found.get(mid)
            if memory is None:
                raise _invalid(
                    SUPERSEDED_UNKNOWN,
                    code="superseded_not_found",
                    field=field,
                    cls=MemoryNotFoundError,
                )
            if memory.is_shared != shared:
                raise _invalid(SUPERSEDES_SHARED_MISMATCH, code="supersedes_mismatch", field=field)
            if memory.superseded_at is not None:
                raise _invalid(
                    ALREADY_SUPERSEDED,
                    code="already_superseded",
                    field=field,
                    cls=MemoryStoreConflictError,
                )
    return found


def _any_term_query(terms) -> str:
    """A ``tsquery`` literal matching documents with any of ``terms`` (already lexemes).

    The OR is parenthesised as a balanced tree: PostgreSQL evaluates a flat ``a | b | …``
    as a chain as deep as the term count, which exceeds its stack depth at ~16k terms (ten
    20k-character memories), whereas a balanced tree is only log2(n) deep.
    """
    quoted = sorted({"'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms})
    return _balanced_or(quoted) if quoted else ""


def _balanced_or(items: Sequence[str]) -> str:
    if len(items) == 1:
        return items[0]
    middle = len(items) // 2
    return f"({_balanced_or(items[:middle])} | {_balanced_or(items[middle:])})"


def _serialise_writers(agent: Agent, requests: Sequence[MemoryStoreRequest]) -> None:
    """Concurrent stores into the same agent/namespace/category wait for each other, so two
    near duplicates racing each other cannot both pass the gate. Transaction-scoped
    advisory locks, taken in a fixed order (no deadlock between overlapping batches)."""
    for group in _groups(agent, requests):
        execute_prepared(
            connection, "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [group]
        )


def _gate_version(agent: Agent, requests: Sequence[MemoryStoreRequest]) -> int:
    """The sum of the change counters of the batch's gate groups (migration 0027's
    ``memory_gate_scope``, bumped by triggers on every write that can change what the gate
    finds there; counters only grow, so an equal sum means no counter moved). A statement
    of its own: read under the advisory lock, its snapshot postdates the lock."""
    return execute_prepared(
        connection,
        "SELECT coalesce(sum(version), 0) FROM memory_gate_scope "
        "WHERE scope IN (SELECT hashtextextended(g, 0) FROM unnest(%s::text[]) AS g)",
        [_groups(agent, requests)],
    )[0][0]


def _groups(agent: Agent, requests: Sequence[MemoryStoreRequest]) -> list[str]:
    return sorted({f"memory-gate:{agent.pk}:{r.namespace}:{r.category.value}" for r in requests})


def _terms(contents: Sequence[str]) -> list[frozenset[str]]:
    """Normalised terms (english lexemes) of each content, in order, in one query."""
    rows = execute_prepared(
        connection,
        "SELECT t.ord, tsvector_to_array(to_tsvector('english'::regconfig, t.c)) "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS t(c, ord) ORDER BY t.ord",
        [list(contents)],
    )
    return [frozenset(lexemes) for _, lexemes in rows]


def _gate(
    agent: Agent, slots: list[_Slot], *, level: MemoryLevel, shared: bool, now: datetime
) -> None:
    """Mark slots that nearly duplicate a live memory, or an earlier slot of the batch.

    Only memories under the same level binding (and task scope) count: a session memory
    must not resolve to one of another session (that one is purged when its own session
    ends), nor a task's working memory to another task's or an unscoped one.
    """
    session_bound = level is MemoryLevel.SESSION
    project_bound = level is MemoryLevel.PROJECT
    duplicates: dict[int, tuple[UUID, str]] = {}
    gated = [slot for slot in slots if slot.terms]
    if gated:
        # An inverted index built on the fly (hash joins on (group, term)): each request is
        # paired only with stored memories sharing one of its rarest terms, so the cost
        # grows with the candidates, not with requests × stored memories.
        with connection.cursor() as cursor:
            # CTE row estimates are guesses; nested loops over them go quadratic. Hash joins
            # are right for every size here. Transaction-local, restored right after, in the
            # same query string (one round trip; the client binds the parameters).
            cursor.execute(
                """
                SELECT set_config('enable_nestloop', 'off', true);
                WITH t AS MATERIALIZED (
                    SELECT ord, grp, tv, n,
                           -- a near duplicate holds one of the request's k rarest terms
                           n - ceil(%s * n / (2 - %s) - 1e-9)::int + 1 AS k
                      FROM (
                        SELECT u.ord,
                               concat_ws(chr(31), u.ns, u.cat, u.subj, u.sid, u.pid::text,
                                         coalesce(u.tid::text, '-')) AS grp,
                               to_tsvector('english'::regconfig, u.body) AS tv,
                               length(to_tsvector('english'::regconfig, u.body)) AS n
                          FROM unnest(%s::int[], %s::text[], %s::text[], %s::text[],
                                      %s::bigint[], %s::bigint[], %s::text[], %s::text[])
                               AS u(ord, ns, cat, sid, pid, tid, body, subj)
                      ) AS parsed
                     WHERE n > 0
                ),
                m AS MATERIALIZED (
                    SELECT id, created_at, embedding_status, grp, ct, length(ct) AS n
                      FROM (
                        SELECT m.id, m.created_at, m.embedding_status,
                               concat_ws(chr(31), m.namespace, m.category, m.subject,
                                         m.session_id, m.project_id::text,
                                         coalesce(m.task_id::text, '-')) AS grp,
                               CASE WHEN m.context = '' THEN m.search_vector
                                    ELSE to_tsvector('english'::regconfig, m.content)
                               END AS ct
                          FROM memory_memory m
                         WHERE m.agent_id = %s AND m.is_shared = %s AND m.level = %s
                           AND m.superseded_at IS NULL
                           AND (m.expires_at IS NULL OR m.expires_at > %s)
                           AND m.namespace = ANY(%s::text[]) AND m.category = ANY(%s::text[])
                           -- shares a term with some request (a GIN index lookup)
                           AND m.search_vector @@ %s::tsquery
                      ) AS live
                     WHERE grp IN (SELECT grp FROM t)
                ),
                mt AS MATERIALIZED (
                    SELECT id, grp, unnest(tsvector_to_array(ct)) AS term FROM m
                ),
                df AS MATERIALIZED (
                    SELECT grp, term, count(*) AS df FROM mt GROUP BY grp, term
                ),
                probe AS MATERIALIZED (
                    SELECT ord, grp, term
                      FROM (
                        SELECT tt.ord, tt.grp, tt.term, tt.k,
                               row_number() OVER (
                                   PARTITION BY tt.ord ORDER BY coalesce(df.df, 0), tt.term
                               ) AS r
                          FROM (
                            SELECT ord, grp, k, unnest(tsvector_to_array(tv)) AS term FROM t
                          ) AS tt
                          LEFT JOIN df USING (grp, term)
                      ) AS ranked
                     WHERE r <= k
                ),
                pairs AS MATERIALIZED (
                    SELECT DISTINCT probe.ord, mt.id FROM probe JOIN mt USING (grp, term)
                ),
                scored AS (
                    SELECT p.ord, m.id, m.created_at, m.embedding_status,
                           -- |A∩B| = |A| + |B| - |A∪B|; tsvector concatenation is the union
                           2.0 * (t.n + m.n - length(m.ct || t.tv)) / (t.n + m.n) AS score
                      FROM pairs p JOIN t USING (ord) JOIN m ON m.id = p.id
                )
                SELECT DISTINCT ON (ord) ord, id, embedding_status
                  FROM scored
                 WHERE score >= %s
                 ORDER BY ord, score DESC, created_at, id;
                SELECT set_config('enable_nestloop', 'on', true)
                """,
                [
                    DUPLICATE_THRESHOLD,
                    DUPLICATE_THRESHOLD,
                    [slot.index for slot in gated],
                    [slot.request.namespace for slot in gated],
                    [slot.request.category.value for slot in gated],
                    [slot.request.session_id if session_bound else "" for slot in gated],
                    [slot.request.project_id if project_bound else None for slot in gated],
                    [slot.request.task_id for slot in gated],
                    [slot.request.content for slot in gated],
                    [slot.request.subject or "" for slot in gated],
                    agent.pk,
                    shared,
                    level.value,
                    now,
                    sorted({slot.request.namespace for slot in gated}),
                    sorted({slot.request.category.value for slot in gated}),
                    _any_term_query(term for slot in gated for term in slot.terms),
                    DUPLICATE_THRESHOLD - 1e-9,
                ],
            )
            cursor.nextset()
            for index, memory_id, status in cursor.fetchall():
                duplicates[index] = (memory_id, status)

    # Within the batch: an inverted index over earlier accepted slots, probed the same way.
    postings: dict[tuple, dict[str, list[Candidate[int]]]] = defaultdict(lambda: defaultdict(list))
    # Probing each slot by the terms rarest in the batch keeps the candidates few: the
    # speaker's name and the session date are in every turn of a conversation (measured:
    # docs/benchmarks/operations.md#write-path).
    frequency = Counter(term for slot in slots for term in slot.terms)
    for slot in slots:
        if slot.index in duplicates:
            slot.result_id, slot.status = duplicates[slot.index]
            slot.deduplicated = True
            continue
        group = postings[
            (
                slot.request.namespace,
                slot.request.category.value,
                slot.request.subject or "",
                slot.request.session_id if session_bound else "",
                slot.request.project_id if project_bound else None,
                slot.request.task_id,
            )
        ]
        seen: dict[int, Candidate[int]] = {}
        for term in probe_terms(slot.terms, frequency=frequency):
            for candidate in group.get(term, ()):
                seen[candidate.key] = candidate
        twin = best_duplicate(slot.terms, list(seen.values()))
        if twin is not None:
            slot.deduplicated, slot.twin = True, twin
            continue
        accepted = Candidate(key=slot.index, terms=slot.terms, order=(slot.index,))
        for term in slot.terms:
            group[term].append(accepted)
