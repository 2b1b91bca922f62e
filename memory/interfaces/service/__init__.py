"""MemoryService: the one entry point for agent-facing calls.

The agent-facing REST views (memories, archive, context, shared knowledge, execution
reports, conversations, journal), the tool-call endpoint, the MCP server and the stdio
server hold a :class:`MemoryService` bound to the acting principal and call its methods;
none of them reaches into the services and selectors below itself. One service per request:
it reads the company's config once (:attr:`ServiceBase.full_config`) and looks the injection
strategy up once, and hands both down — the strategy, the org context, the memory search,
the embedder and the query adapters read nothing again (a context or search call reads the
config exactly once). Pages for humans (console, admin) and the read endpoints humans share with
agents (execution report list/detail, ``skill.md``) call the same services and
principal-aware selectors directly. The service

* requires an agent principal (memory belongs to agents; 403 ``agents_only`` otherwise),
* routes errors by type: every failure leaves as a :class:`synthorg.errors.DomainError`
  (Django's ``ValidationError`` / ``ObjectDoesNotExist`` are translated here), which the
  interfaces map to problem+json (REST) or a tool error (MCP),
* owns the audit trail of its writes (through the services, in their transactions), and
* guards destructive operations called as tools: the caller passes the
  :class:`~synthorg.tools.Confirmation` the dispatcher built from a literal ``confirm: true``
  and a non-blank ``reason``; the deletion is audited with the actor, the reason and the
  interface it came through, and
* records every search and context call in the company's request log
  (``memory.core.services.request_log``: a row with the query, the result count, the
  latency and the degraded legs, written after the response is sent —
  ``synthorg.after_response``) — the one place the REST, tool and MCP paths pass through,
  and, for a context call that pinned the core policy block, which revision the agent
  received (``orgmemory.services.policy_deliveries``: one upsert per agent).
  A ``dry_run`` context (the console's preview) runs the same strategy and records nothing.

One class behind one entry point, composed of one part per capability (each a module of
this package): ``base`` (the agent, the config, namespaces, replica reads, the request log,
error routing), ``memories`` (private memories and the archive), ``retrieval`` (search,
the ``search_memory`` tool, context), ``shared`` (shared knowledge), ``self_editing``
(core / archival / recall blocks), ``procedural`` (execution reports, applied lessons and
org skills) and ``conversations`` (conversations, the journal, dreams).
"""

from __future__ import annotations

from memory.interfaces.service.base import AGENTS_ONLY, NOT_FOUND, ServiceBase
from memory.interfaces.service.conversations import ConversationsMixin
from memory.interfaces.service.memories import MemoriesMixin
from memory.interfaces.service.procedural import ProceduralMixin
from memory.interfaces.service.retrieval import RetrievalMixin
from memory.interfaces.service.self_editing import SelfEditingMixin
from memory.interfaces.service.shared import SharedKnowledgeMixin

__all__ = ["AGENTS_ONLY", "NOT_FOUND", "MemoryService"]


class MemoryService(
    MemoriesMixin,
    RetrievalMixin,
    SharedKnowledgeMixin,
    SelfEditingMixin,
    ProceduralMixin,
    ConversationsMixin,
    ServiceBase,
):
    """Agent memory operations as ``principal`` (an agent's :class:`Principal`): one class,
    one instance per request, composed of one part per capability (each a module of this
    package on :class:`~memory.interfaces.service.base.ServiceBase`)."""
