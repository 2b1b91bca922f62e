"""Reads of an agent's own memories and of its company's shared knowledge.

Every read here hides expired memories (``expires_at`` in the past): they never come back,
even by id. Another agent's private memory, or anything of another company, is simply not
found (404), so its existence does not leak.

Shared knowledge is read only while the company has it on
(``memory.options.shared_knowledge_base``, :func:`shared_knowledge_enabled`): with it off, the
explicit shared reads refuse (403 ``shared_knowledge_disabled``, :func:`shared_knowledge_require`)
and the reads of "the agent's own or shared" memories (:func:`agent_visible_q`, search with
``include_shared``, context) leave shared entries out. This module is the one check every
agent-facing path (REST, tools, MCP, context) goes through.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.db.models import Q, QuerySet
from django.utils import timezone

from memory.core.errors import MemoryNotFoundError, SharedKnowledgeDisabledError
from memory.core.models.memory import Memory, live_q
from memory.core.models.revision import MemoryRevision
from persistence.models import Agent, Company
from persistence.selectors.config import company_config
from synthorg.company_config import CompanyConfig

MEMORY_NOT_FOUND = "No such memory."
SHARED_NOT_FOUND = "No such shared knowledge entry."
SHARED_DISABLED = (
    "Shared knowledge is disabled for this company (memory.options.shared_knowledge_base)."
)


def shared_knowledge_enabled(company: Company, config: CompanyConfig | None = None) -> bool:
    """Whether the company has shared knowledge on (``memory.options.shared_knowledge_base``;
    ``config``: the company's, when the caller has read it)."""
    return (config or company_config(company)).memory.options.shared_knowledge_base


def shared_knowledge_require(company: Company, config: CompanyConfig | None = None) -> None:
    """403 ``shared_knowledge_disabled`` unless the company has shared knowledge on."""
    if not shared_knowledge_enabled(company, config):
        raise SharedKnowledgeDisabledError(SHARED_DISABLED)


def agent_visible_q(agent: Agent, *, prefix: str = "") -> Q:
    """The memories ``agent`` may read by id: its own private ones, and the company's shared
    ones while shared knowledge is on (``prefix``: the path to the memory, e.g. ``memory__``)."""
    visible = Q(**{f"{prefix}agent": agent, f"{prefix}is_shared": False})
    if shared_knowledge_enabled(agent.company):
        visible |= Q(**{f"{prefix}is_shared": True})
    return visible


def agent_memories(
    *, agent: Agent, now: datetime | None = None, include_superseded: bool = False
) -> QuerySet[Memory]:
    """The agent's private, unexpired memories (superseded ones only when asked)."""
    now = now or timezone.now()
    query = Memory.objects.filter(company_id=agent.company_id, agent=agent, is_shared=False)
    query = query.unexpired(now) if include_superseded else query.live(now)
    return query.order_by("-created_at", "-id")


def subject_memories(
    *, company: Company, subject: str, agent: Agent | None = None, now: datetime | None = None
) -> QuerySet[Memory]:
    """The unexpired memories about ``subject`` in ``company`` — private memories of every
    agent and shared knowledge — newest first (superseded ones included: the list shows
    ``superseded_at``). ``agent``: only that agent's own (private and published) rows. Who
    may make the company-wide read is the caller's rule (``memory.interfaces``)."""
    now = now or timezone.now()
    query = Memory.objects.filter(company=company, subject=subject).unexpired(now)
    if agent is not None:
        query = query.filter(agent=agent)
    return query.select_related("agent").order_by("-created_at", "-id")


def _uuid(memory_id: UUID | str, message: str, code: str) -> UUID:
    try:
        return memory_id if isinstance(memory_id, UUID) else UUID(str(memory_id))
    except ValueError:
        raise MemoryNotFoundError(message, code=code) from None


def agent_memory_get(*, agent: Agent, memory_id: UUID | str, now: datetime | None = None) -> Memory:
    """One private memory of ``agent`` (superseded ones included, expired ones not)."""
    memory_id = _uuid(memory_id, MEMORY_NOT_FOUND, MemoryNotFoundError.code)
    memory = (
        agent_memories(agent=agent, now=now, include_superseded=True).filter(pk=memory_id).first()
    )
    if memory is None:
        raise MemoryNotFoundError(MEMORY_NOT_FOUND)
    return memory


def agent_memory_count(
    *, agent: Agent, category: str | None = None, now: datetime | None = None
) -> int:
    """How many live private memories ``agent`` has (optionally of one category)."""
    query = agent_memories(agent=agent, now=now)
    if category:
        query = query.filter(category=category)
    return query.count()


def shared_memories(
    *, company: Company, now: datetime | None = None, require_enabled: bool = True
) -> QuerySet[Memory]:
    """The company's live shared knowledge, newest first (403 while it is off, unless
    ``require_enabled`` is false: a human inspecting what the company holds)."""
    if require_enabled:
        shared_knowledge_require(company)
    now = now or timezone.now()
    return (
        Memory.objects.filter(company=company, is_shared=True)
        .filter(live_q(now))
        .order_by("-created_at", "-id")
    )


def shared_memory_get(
    *, company: Company, memory_id: UUID | str, require_enabled: bool = True
) -> Memory:
    """One shared entry of the company, superseded ones included (403 while shared knowledge
    is off, unless ``require_enabled`` is false: a human inspecting it)."""
    if require_enabled:
        shared_knowledge_require(company)
    memory_id = _uuid(memory_id, SHARED_NOT_FOUND, "shared_not_found")
    memory = Memory.objects.filter(company=company, is_shared=True, pk=memory_id).first()
    if memory is None:
        raise MemoryNotFoundError(SHARED_NOT_FOUND, code="shared_not_found")
    return memory


def memory_revisions(memory: Memory) -> QuerySet[MemoryRevision]:
    """The texts corrections replaced in ``memory``, oldest first, each with its correction's
    audit entry (who, when, why) and that entry's human actor joined: a page in two queries
    (the count and the rows). The caller has already found ``memory`` readable."""
    return (
        MemoryRevision.objects.filter(company_id=memory.company_id, memory=memory)
        .select_related("audit_entry__actor_user")
        .order_by("created_at", "id")
    )
