"""The spec's ``OrgMemoryBackend`` protocol and its Postgres implementation.

:class:`PostgresOrgMemoryBackend` is the "hybrid prompt + retrieval" backend for one
company: core policies (config first, then core_policy facts) for the system prompt,
extended facts retrieved by relevance. Methods are ``async`` as the spec's protocol is;
the ORM work runs through ``sync_to_async`` on Django's thread-sensitive executor.

A human author needs a Django user to attribute the write to: pass ``acting_user``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from asgiref.sync import sync_to_async
from django.db import connection

from orgmemory import selectors
from orgmemory.domain import OrgFact, OrgFactAuthor, OrgFactWriteRequest, OrgMemoryQuery
from orgmemory.services.facts import fact_publish
from persistence.models import Agent, Company
from persistence.principal import Principal
from synthorg.errors import AccessDeniedError, ServiceUnavailableError

NOT_CONNECTED = "The org memory backend is not connected."
UNKNOWN_AGENT = "The author agent does not belong to this company."
HUMAN_NEEDS_USER = "A human author needs the acting user the backend was created with."


@runtime_checkable
class OrgMemoryBackend(Protocol):
    @property
    def is_connected(self) -> bool: ...

    @property
    def backend_name(self) -> str: ...

    async def connect(self) -> None: ...

    async def disconnect(self) -> None: ...

    async def health_check(self) -> bool: ...

    async def query(self, query: OrgMemoryQuery) -> tuple[OrgFact, ...]: ...

    async def write(self, request: OrgFactWriteRequest, *, author: OrgFactAuthor) -> str: ...

    async def list_policies(
        self, *, limit: int | None = None, offset: int = 0
    ) -> tuple[OrgFact, ...]: ...

    async def count_policies(self) -> int: ...


class PostgresOrgMemoryBackend:
    """Org memory of one company over the Postgres operation log."""

    def __init__(self, company: Company, *, acting_user=None) -> None:
        self._company = company
        self._acting_user = acting_user
        self._connected = False

    @property
    def is_connected(self) -> bool:
        return self._connected

    @property
    def backend_name(self) -> str:
        return "hybrid_prompt_retrieval"

    async def connect(self) -> None:
        if not await self.health_check():
            raise ServiceUnavailableError("The database is unreachable.", code="db_unavailable")
        self._connected = True

    async def disconnect(self) -> None:
        self._connected = False

    async def health_check(self) -> bool:
        return await sync_to_async(_database_usable)()

    async def query(self, query: OrgMemoryQuery) -> tuple[OrgFact, ...]:
        self._require_connected()
        views = await sync_to_async(selectors.query_facts)(company=self._company, query=query)
        return tuple(_to_fact(view) for view in views)

    async def write(self, request: OrgFactWriteRequest, *, author: OrgFactAuthor) -> str:
        """Publish a new fact; returns its id. Raises ``OrgMemoryAccessDeniedError``."""
        self._require_connected()
        return await sync_to_async(self._write)(request, author)

    async def list_policies(
        self, *, limit: int | None = None, offset: int = 0
    ) -> tuple[OrgFact, ...]:
        """Config policies first, then core_policy facts; ``limit=None`` returns all."""
        self._require_connected()
        items = await sync_to_async(selectors.policies)(company=self._company)
        end = None if limit is None else offset + limit
        return tuple(self._policy_fact(item) for item in items[offset:end])

    async def count_policies(self) -> int:
        self._require_connected()
        return len(await sync_to_async(selectors.policies)(company=self._company))

    def _require_connected(self) -> None:
        if not self._connected:
            raise ServiceUnavailableError(NOT_CONNECTED, code="org_memory_not_connected")

    def _write(self, request: OrgFactWriteRequest, author: OrgFactAuthor) -> str:
        if author.is_human:
            if self._acting_user is None:
                raise AccessDeniedError(HUMAN_NEEDS_USER, code="human_author_unattributed")
            actor = Principal.for_human(self._acting_user, self._company, role="")
        else:
            agent = Agent.objects.filter(company=self._company, pk=author.agent_id).first()
            if agent is None:
                raise AccessDeniedError(UNKNOWN_AGENT, code="unknown_author")
            actor = Principal.for_agent(agent)
        entry = fact_publish(
            company=self._company,
            actor=actor,
            content=request.content,
            category=request.category,
            tags=request.tags,
        )
        return str(entry.fact_id)

    def _policy_fact(self, item: selectors.PolicyView) -> OrgFact:
        return OrgFact(
            id=item.id,
            content=item.content,
            category="core_policy",
            author=OrgFactAuthor(is_human=True),
            created_at=item.created_at or self._company.created_at,
            version=item.version or 1,
        )


def _to_fact(view: selectors.FactView) -> OrgFact:
    return OrgFact(
        id=str(view.fact_id),
        content=view.content,
        category=view.category,
        tags=tuple(view.tags),
        author=view.author,
        created_at=view.created_at,
        version=view.version,
        updated_at=view.updated_at,
        score=view.score,
    )


def _database_usable() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:  # any database failure means "not healthy"
        return False
