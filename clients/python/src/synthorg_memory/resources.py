"""The API grouped by resource: ``client.memories``, ``client.shared``, ``client.org``,
``client.executions``, ``client.conversations``, ``client.dreams``, ``client.subjects``.

Each method describes its request once (an :class:`Endpoint` and the members it sends); the
client runs it. On :class:`~synthorg_memory.MemoryClient` a method returns its result; on
:class:`~synthorg_memory.AsyncMemoryClient` the same method returns an awaitable of it, and
a paginated list is an async iterator instead of an iterator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict, Unpack

from synthorg_memory import models as m
from synthorg_memory._transport import Call, Endpoint, present

# --- the endpoints the client calls (checked against the served schema by a test) ---------

_STORE_FIELDS = (
    "content", "category", "namespace", "context", "source", "confidence", "tags",
    "expires_at", "supersedes", "subject",
)  # fmt: skip
_SEARCH_FIELDS = (
    "query", "namespaces", "categories", "tags", "since", "until", "min_relevance", "limit",
    "subject",
)  # fmt: skip
MEMORY_STORE = Endpoint(
    "POST",
    "/memories",
    m.StoreResult,
    body=(*_STORE_FIELDS, "created_at", "session_id", "project_id", "task_id"),
)
MEMORY_LIST = Endpoint(
    "GET",
    "/memories",
    m.Memory,
    query=(
        "category", "namespace", "tag", "created_after", "created_before", "level",
        "session_id", "include_superseded", "subject", "page_size",
    ),
    shape="page",
)  # fmt: skip
MEMORY_GET = Endpoint("GET", "/memories/{id}", m.Memory)
MEMORY_UPDATE = Endpoint(
    "PATCH",
    "/memories/{id}",
    m.Memory,
    body=("content", "context", "category", "namespace", "source", "confidence", "tags",
          "expires_at"),
)  # fmt: skip
MEMORY_DELETE = Endpoint("DELETE", "/memories/{id}")
MEMORY_FROM_MESSAGES = Endpoint(
    "POST",
    "/memories/from-messages",
    m.MemoriesFromMessages,
    body=(
        "messages", "subject", "conversation_id", "session_id", "project_id", "wait",
        "timeout_seconds",
    ),
)  # fmt: skip
MEMORY_HISTORY = Endpoint(
    "GET", "/memories/{id}/history", m.MemoryRevision, query=("page_size",), shape="page"
)
MEMORY_COUNT = Endpoint("GET", "/memories/count", m.MemoryCount, query=("category",))
MEMORY_SEARCH = Endpoint(
    "POST",
    "/memories/search",
    m.SearchResponse,
    body=(*_SEARCH_FIELDS, "include_shared", "task_id"),
)
MEMORY_CONTEXT = Endpoint(
    "POST",
    "/memories/context",
    m.MemoryContext,
    body=("query", "token_budget", "categories", "namespaces", "include_org", "subject", "task_id"),
)
SHARED_PUBLISH = Endpoint("POST", "/shared", m.StoreResult, body=_STORE_FIELDS)
SHARED_SEARCH = Endpoint(
    "POST", "/shared/search", m.SearchResponse, body=(*_SEARCH_FIELDS, "exclude_self")
)
SHARED_RETRACT = Endpoint("DELETE", "/shared/{id}")
FACT_LIST = Endpoint(
    "GET", "/org/facts", m.Fact, query=("category", "as_of", "page_size"), shape="page"
)
FACT_GET = Endpoint("GET", "/org/facts/{fact_id}", m.Fact, query=("as_of",))
FACT_PUBLISH = Endpoint(
    "POST",
    "/org/facts",
    m.Fact,
    body=("content", "category", "tags", "fact_id", "expected_version"),
)
FACT_QUERY = Endpoint(
    "POST",
    "/org/facts/query",
    m.FactQueryResult,
    body=("context", "categories", "limit", "as_of"),
)
FACT_RETRACT = Endpoint(
    "POST",
    "/org/facts/{fact_id}/retract",
    m.Fact,
    body=("expected_version", "reason"),
)
FACT_HISTORY = Endpoint("GET", "/org/facts/{fact_id}/history", m.LogEntry, shape="array")
POLICY_LIST = Endpoint("GET", "/org/policies", m.Policy, query=("as_of", "page_size"), shape="page")
EXECUTION_REPORT = Endpoint(
    "POST",
    "/executions",
    m.ExecutionReportAccepted,
    body=(
        "outcome", "task_id", "task_title", "task_type", "task_description", "error",
        "tool_calls", "retry_count", "turn_count", "quality_score", "duration_ms",
        "recovery", "subject",
    ),
)  # fmt: skip
EXECUTION_LIST = Endpoint(
    "GET",
    "/executions",
    m.ExecutionReport,
    query=("agent", "capture_status", "from", "to", "outcome", "task", "subject", "page_size"),
    shape="page",
)
EXECUTION_GET = Endpoint("GET", "/executions/{id}", m.ExecutionReport)
CONVERSATION_LIST = Endpoint(
    "GET", "/conversations", m.Conversation, query=("subject", "page_size"), shape="page"
)
CONVERSATION_GET = Endpoint("GET", "/conversations/{conversation_id}", m.Conversation)
CONVERSATION_DELETE = Endpoint("DELETE", "/conversations/{conversation_id}")
CONVERSATION_POP = Endpoint(
    "DELETE", "/conversations/{conversation_id}/messages/last", m.ConversationMessage
)
CONVERSATION_FLUSH = Endpoint(
    "POST",
    "/conversations/{conversation_id}/messages",
    m.FlushResult,
    body=("messages", "session_id", "project_id", "subject"),
)
CONVERSATION_MESSAGES = Endpoint(
    "GET",
    "/conversations/{conversation_id}/messages",
    m.ConversationMessage,
    query=("after_seq", "before_seq", "q", "role", "page_size"),
    shape="page",
)
CONVERSATION_CONTEXT = Endpoint(
    "POST",
    "/conversations/{conversation_id}/context",
    m.ConversationContext,
    body=("token_budget",),
)
EXTRACTION_LIST = Endpoint(
    "GET",
    "/conversations/{conversation_id}/extractions",
    m.ExtractionRun,
    query=("page_size",),
    shape="page",
)
EXTRACTION_GET = Endpoint(
    "GET", "/conversations/{conversation_id}/extractions/{run_id}", m.ExtractionRunDetail
)
DREAM_REQUEST = Endpoint("POST", "/dreams", m.DreamRequest)
DREAM_REQUEST_GET = Endpoint("GET", "/dreams/requests/{request_id}", m.DreamRequest)
SUBJECT_MEMORIES = Endpoint(
    "GET", "/subjects/{subject}/memories", m.Memory, query=("page_size",), shape="page"
)
SUBJECT_ERASE = Endpoint(
    "POST", "/subjects/{subject}/erase", m.SubjectErasureReceipt, body=("reason",)
)

ENDPOINTS = tuple(value for value in list(globals().values()) if isinstance(value, Endpoint))


class StoreMembers(TypedDict, total=False):
    """What a memory (or a shared entry) may carry besides its content and category."""

    tags: Sequence[str]
    namespace: str | Sequence[str]
    context: str
    source: str
    confidence: float
    expires_at: datetime
    supersedes: Sequence[str]
    subject: str


class SearchFilters(TypedDict, total=False):
    namespaces: Sequence[str | Sequence[str]]
    categories: Sequence[str]
    tags: Sequence[str]
    since: datetime
    until: datetime
    min_relevance: float
    subject: str


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: "leave as it is" for a member whose ``None`` means something (``expires_at=None``
#: removes a memory's expiry)
UNSET: Any = _Unset()


class Resource:
    def __init__(self, transport) -> None:
        self._transport = transport

    def _run(self, call: Call):
        """The result (sync client) or an awaitable of it (async client)."""
        return self._transport.run(call)

    def _pages(self, call: Call):
        """An iterator over every item of every page (async iterator: async client)."""
        return self._transport.pages(call)


def _with_store_outcome(result: m.StoreResult):
    if result.id is None:  # the agent's memory level is `none`: nothing was stored
        return None
    outcome = {
        "stored": result.stored,
        "deduplicated": result.deduplicated,
        "warnings": result.warnings,
    }
    return Call(
        MEMORY_GET,
        {"id": result.id},
        then=lambda memory: m.StoredMemory(**{**memory.model_dump(), **outcome}),
    )


class Memories(Resource):
    """The calling agent's private memories."""

    def store(
        self,
        *,
        content: str,
        category: str,
        created_at: datetime | None = None,
        session_id: str | None = None,
        project_id: int | None = None,
        subject: str | None = None,
        task_id: int | None = None,
        **members: Unpack[StoreMembers],
    ):
        """Store a memory and return it (:class:`~synthorg_memory.models.StoredMemory`):
        a near duplicate returns the memory it matched (``deduplicated=True``); ``None``
        when the agent's memory level is ``none`` (nothing is stored). ``subject``: the end
        user it is about (erased with them). ``members``: tags, namespace (a name or a
        tuple), context, source, confidence, expires_at, supersedes. ``task_id`` scopes a
        ``working`` memory to a task (read within it, archived when it ends)."""
        body = present(
            content=content, category=category, created_at=created_at, session_id=session_id,
            project_id=project_id, subject=subject, task_id=task_id, **members,
        )  # fmt: skip
        return self._run(Call(MEMORY_STORE, body=body, then=_with_store_outcome))

    def add(
        self,
        messages: Iterable[Mapping[str, Any]],
        *,
        subject: str | None = None,
        conversation_id: str | None = None,
        wait: bool | None = None,
        timeout_seconds: int | None = None,
        session_id: str | None = None,
        project_id: int | None = None,
    ):
        """Add memories from chat messages in one call (Mem0's ``add``): the messages
        (``{"role", "content", "name"?, "created_at"?}``) are recorded as a conversation
        (``conversation_id``, or a new one) about ``subject`` and extracted at once
        (:class:`~synthorg_memory.models.MemoriesFromMessages`). ``wait=True``: wait up to
        ``timeout_seconds`` (≤ 30) for the memories formed (``.memories``); otherwise, or
        when it takes longer, ``.extraction == "queued"`` and ``.poll`` says where to look."""
        body = present(
            messages=[dict(message) for message in messages], subject=subject,
            conversation_id=conversation_id, wait=wait, timeout_seconds=timeout_seconds,
            session_id=session_id, project_id=project_id,
        )  # fmt: skip
        return self._run(Call(MEMORY_FROM_MESSAGES, body=body))

    def get(self, memory_id: str):
        """One of the caller's memories (:class:`~synthorg_memory.models.Memory`)."""
        return self._run(Call(MEMORY_GET, {"id": memory_id}))

    def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        context: str | None = None,
        category: str | None = None,
        namespace: str | None = None,
        source: str | None = None,
        confidence: float | None = None,
        tags: Sequence[str] | None = None,
        expires_at: datetime | None = UNSET,
    ):
        """Change the members given (new text is re-embedded); ``expires_at=None`` removes
        the expiry. Returns the memory."""
        body = present(
            content=content, context=context, category=category, namespace=namespace,
            source=source, confidence=confidence, tags=tags,
        )  # fmt: skip
        if expires_at is not UNSET:
            body["expires_at"] = expires_at
        return self._run(Call(MEMORY_UPDATE, {"id": memory_id}, body=body))

    def delete(self, memory_id: str):
        """Delete a memory for good (audited)."""
        return self._run(Call(MEMORY_DELETE, {"id": memory_id}))

    def list(
        self,
        *,
        category: str | None = None,
        namespace: str | None = None,
        tags: Sequence[str] | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        level: str | None = None,
        session_id: str | None = None,
        include_superseded: bool | None = None,
        subject: str | None = None,
        page_size: int | None = None,
    ):
        """Every matching memory, newest first, fetched a page at a time as you iterate
        (``tags``: memories carrying all of them; ``subject``: about that end user)."""
        query = present(
            category=category, namespace=namespace, tag=tags,
            created_after=created_after, created_before=created_before, level=level,
            session_id=session_id, include_superseded=include_superseded, subject=subject,
            page_size=page_size,
        )  # fmt: skip
        return self._pages(Call(MEMORY_LIST, query=query))

    def count(self, *, category: str | None = None):
        """How many live memories the caller has (:class:`~synthorg_memory.models.MemoryCount`)."""
        return self._run(Call(MEMORY_COUNT, query=present(category=category)))

    def search(
        self,
        *,
        query: str | None = None,
        limit: int | None = None,
        include_shared: bool | None = None,
        subject: str | None = None,
        task_id: int | None = None,
        **filters: Unpack[SearchFilters],
    ):
        """Hybrid search (:class:`~synthorg_memory.models.SearchResponse`): ``.results``
        are hits with ``.memory`` and ``.score``, best first. ``subject``: only memories
        about that end user. ``filters``: namespaces, categories, tags, since, until,
        min_relevance. ``task_id``: also that task's working memories."""
        body = present(
            query=query,
            limit=limit,
            include_shared=include_shared,
            subject=subject,
            task_id=task_id,
            **filters,
        )
        return self._run(Call(MEMORY_SEARCH, body=body))

    def context(
        self,
        *,
        query: str,
        token_budget: int,
        categories: Sequence[str] | None = None,
        namespaces: Sequence[str | Sequence[str]] | None = None,
        include_org: bool | None = None,
        subject: str | None = None,
        task_id: int | None = None,
    ):
        """Chat messages of the caller's memories for a prompt, within ``token_budget``
        (:class:`~synthorg_memory.models.MemoryContext`: ``.messages``); ``subject``: only
        memories about that end user; ``task_id``: also that task's working memories."""
        body = present(
            query=query, token_budget=token_budget, categories=categories,
            namespaces=namespaces, include_org=include_org, subject=subject, task_id=task_id,
        )  # fmt: skip
        return self._run(Call(MEMORY_CONTEXT, body=body))

    def history(self, memory_id: str, *, page_size: int | None = None):
        """The memory's corrections, oldest first (an iterator of
        :class:`~synthorg_memory.models.MemoryRevision`)."""
        return self._pages(
            Call(MEMORY_HISTORY, {"id": memory_id}, query=present(page_size=page_size))
        )


class Shared(Resource):
    """The company's shared knowledge."""

    def publish(self, *, content: str, category: str, **members: Unpack[StoreMembers]):
        """Publish shared knowledge (:class:`~synthorg_memory.models.StoreResult`); the
        members are :meth:`Memories.store`'s."""
        body = present(content=content, category=category, **members)
        return self._run(Call(SHARED_PUBLISH, body=body))

    def search(
        self,
        *,
        query: str | None = None,
        limit: int | None = None,
        exclude_self: bool | None = None,
        **filters: Unpack[SearchFilters],
    ):
        """Search the company's shared knowledge; the filters are :meth:`Memories.search`'s."""
        body = present(query=query, limit=limit, exclude_self=exclude_self, **filters)
        return self._run(Call(SHARED_SEARCH, body=body))

    def retract(self, memory_id: str):
        """Retract shared knowledge the caller published (others: 403)."""
        return self._run(Call(SHARED_RETRACT, {"id": memory_id}))


class Org(Resource):
    """Org memory: facts (versioned, append-only) and core policies."""

    def facts(
        self,
        *,
        category: str | None = None,
        as_of: datetime | None = None,
        page_size: int | None = None,
    ):
        """Every live fact (as of a time), oldest first, a page at a time."""
        query = present(category=category, as_of=as_of, page_size=page_size)
        return self._pages(Call(FACT_LIST, query=query))

    def fact(self, fact_id: str, *, as_of: datetime | None = None):
        return self._run(Call(FACT_GET, {"fact_id": fact_id}, query=present(as_of=as_of)))

    def publish(
        self,
        *,
        content: str,
        category: str,
        tags: Sequence[str] | None = None,
        fact_id: str | None = None,
        expected_version: int | None = None,
    ):
        """Publish a fact, or (``fact_id``) a new version of one
        (:class:`~synthorg_memory.models.Fact`)."""
        body = present(
            content=content, category=category, tags=tags, fact_id=fact_id,
            expected_version=expected_version,
        )  # fmt: skip
        return self._run(Call(FACT_PUBLISH, body=body))

    def query(
        self,
        *,
        context: str | None = None,
        categories: Sequence[str] | None = None,
        limit: int | None = None,
        as_of: datetime | None = None,
    ):
        """Facts relevant to ``context`` (:class:`~synthorg_memory.models.FactQueryResult`)."""
        body = present(context=context, categories=categories, limit=limit, as_of=as_of)
        return self._run(Call(FACT_QUERY, body=body))

    def retract(
        self, fact_id: str, *, reason: str | None = None, expected_version: int | None = None
    ):
        body = present(reason=reason, expected_version=expected_version)
        return self._run(Call(FACT_RETRACT, {"fact_id": fact_id}, body=body))

    def history(self, fact_id: str):
        """Every version of a fact, oldest first (a list of
        :class:`~synthorg_memory.models.LogEntry`)."""
        return self._run(Call(FACT_HISTORY, {"fact_id": fact_id}))

    def policies(self, *, as_of: datetime | None = None, page_size: int | None = None):
        """The core policies every agent's prompt carries, a page at a time."""
        return self._pages(Call(POLICY_LIST, query=present(as_of=as_of, page_size=page_size)))


class Executions(Resource):
    """Execution reports: what a task's run did, from which lessons are learnt."""

    def report(
        self,
        *,
        outcome: str,
        task_id: int | None = None,
        task_title: str | None = None,
        task_type: str | None = None,
        task_description: str | None = None,
        error: Mapping[str, str] | None = None,
        tool_calls: Iterable[Mapping[str, Any]] | None = None,
        retry_count: int | None = None,
        turn_count: int | None = None,
        quality_score: float | None = None,
        duration_ms: int | None = None,
        recovery: str | None = None,
        subject: str | None = None,
    ):
        """Report an outcome (:class:`~synthorg_memory.models.ExecutionReportAccepted`);
        ``error`` is ``{"category", "message"}``, each tool call ``{"name", "status",
        "error", "duration_ms"}``; ``subject``: the end user the task served."""
        body = present(
            outcome=outcome, task_id=task_id, task_title=task_title, task_type=task_type,
            task_description=task_description, error=dict(error) if error else None,
            tool_calls=[dict(c) for c in tool_calls] if tool_calls is not None else None,
            retry_count=retry_count, turn_count=turn_count, quality_score=quality_score,
            duration_ms=duration_ms, recovery=recovery, subject=subject,
        )  # fmt: skip
        return self._run(Call(EXECUTION_REPORT, body=body))

    def list(
        self,
        *,
        agent: int | None = None,
        outcome: str | None = None,
        task: int | None = None,
        capture_status: str | None = None,
        from_: datetime | None = None,
        to: datetime | None = None,
        subject: str | None = None,
        page_size: int | None = None,
    ):
        """Execution reports, newest first, a page at a time."""
        query = present(
            agent=agent, outcome=outcome, task=task, capture_status=capture_status,
            to=to, subject=subject, page_size=page_size,
        )  # fmt: skip
        if from_ is not None:
            query["from"] = from_
        return self._pages(Call(EXECUTION_LIST, query=query))

    def get(self, report_id: str):
        return self._run(Call(EXECUTION_GET, {"id": report_id}))


class Conversations(Resource):
    """Conversations: messages flushed as they happen, extracted into memories later."""

    def list(self, *, subject: str | None = None, page_size: int | None = None):
        query = present(subject=subject, page_size=page_size)
        return self._pages(Call(CONVERSATION_LIST, query=query))

    def add_messages(
        self,
        conversation_id: str,
        messages: Iterable[Mapping[str, Any]],
        *,
        session_id: str | None = None,
        project_id: int | None = None,
        subject: str | None = None,
    ):
        """Flush messages (``{"role", "content", "name"?, "created_at"?}``) of a
        conversation (:class:`~synthorg_memory.models.FlushResult`); ``subject``: the end
        user it is with, fixed by the first flush (the extracted memories carry it)."""
        body = present(
            messages=[dict(message) for message in messages],
            session_id=session_id,
            project_id=project_id,
            subject=subject,
        )
        return self._run(Call(CONVERSATION_FLUSH, {"conversation_id": conversation_id}, body=body))

    def messages(
        self,
        conversation_id: str,
        *,
        after_seq: int | None = None,
        before_seq: int | None = None,
        q: str | None = None,
        role: str | None = None,
        page_size: int | None = None,
    ):
        query = present(
            after_seq=after_seq, before_seq=before_seq, q=q, role=role, page_size=page_size
        )
        call = Call(CONVERSATION_MESSAGES, {"conversation_id": conversation_id}, query=query)
        return self._pages(call)

    def get(self, conversation_id: str):
        """One conversation (:class:`~synthorg_memory.models.Conversation`): its
        ``message_count`` is its last ``seq``."""
        return self._run(Call(CONVERSATION_GET, {"conversation_id": conversation_id}))

    def delete(self, conversation_id: str):
        """Delete a conversation: its messages, running summary and extraction runs (the
        memories they formed stay). The id may be flushed to again."""
        return self._run(Call(CONVERSATION_DELETE, {"conversation_id": conversation_id}))

    def pop_message(self, conversation_id: str):
        """Remove the conversation's last message and return it
        (:class:`~synthorg_memory.models.ConversationMessage`); the next flush reuses its
        ``seq``. ``NotFoundError`` (``conversation_empty``) when none is left."""
        return self._run(Call(CONVERSATION_POP, {"conversation_id": conversation_id}))

    def context(self, conversation_id: str, *, token_budget: int):
        """The running summary and recent messages within ``token_budget``."""
        body = {"token_budget": token_budget}
        return self._run(
            Call(CONVERSATION_CONTEXT, {"conversation_id": conversation_id}, body=body)
        )

    def extractions(self, conversation_id: str, *, page_size: int | None = None):
        call = Call(
            EXTRACTION_LIST,
            {"conversation_id": conversation_id},
            query=present(page_size=page_size),
        )
        return self._pages(call)

    def extraction(self, conversation_id: str, run_id: str):
        path = {"conversation_id": conversation_id, "run_id": run_id}
        return self._run(Call(EXTRACTION_GET, path))


class Dreams(Resource):
    """Deep dreams (the journal consolidated into the agent's core memory), on request."""

    def request(self):
        """Ask for a dream now (:class:`~synthorg_memory.models.DreamRequest`); rate-limited
        per agent and per company (429, retried after ``Retry-After``)."""
        return self._run(Call(DREAM_REQUEST))

    def get(self, request_id: str):
        return self._run(Call(DREAM_REQUEST_GET, {"request_id": request_id}))


class Subjects(Resource):
    """End users (``subject``): what is known about one person, and their erasure."""

    def memories(self, subject: str, *, page_size: int | None = None):
        """The memories about ``subject``, newest first, a page at a time: an agent key
        reads its own; a human operator, admin or owner every agent's."""
        call = Call(SUBJECT_MEMORIES, {"subject": subject}, query=present(page_size=page_size))
        return self._pages(call)

    def erase(self, subject: str, *, reason: str | None = None):
        """Erase ``subject`` (:class:`~synthorg_memory.models.SubjectErasureReceipt`): an
        agent key erases what that agent holds about them (``scope="agent"``); erasure
        across every agent of the company is an admin's (console, ``manage.py
        erase_subject``). Audited; repeating it deletes nothing more."""
        body = present(reason=reason)
        return self._run(Call(SUBJECT_ERASE, {"subject": subject}, body=body))
