"""Org memory's agent tools (served by ``/api/v1/memories/tools/call`` and the MCP server).

Handlers call the org-memory services and selectors as the calling principal, so write
rules, the audit trail and the 403/404/409 answers are the REST API's own.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import Field

from orgmemory import selectors
from orgmemory.api.serializers import (
    PolicySerializer,
    ScoredFactSerializer,
    WriteRequestSerializer,
)
from orgmemory.domain import OrgMemoryQuery
from orgmemory.services.facts import author_for, fact_publish, fact_retract
from orgmemory.services.write_requests import write_request_file
from orgmemory.write_access import explain_write_access
from persistence.selectors.config import company_config
from synthorg.enums import OrgFactCategory
from synthorg.tools import (
    DestructiveArguments,
    ToolArguments,
    ToolContext,
    ToolResult,
    ToolSpec,
    json_ready,
    register_tool,
)

FactCategory = Literal["core_policy", "adr", "procedure", "convention", "entity_definition"]


class PoliciesArgs(ToolArguments):
    pass


class FactQueryArgs(ToolArguments):
    query: str | None = Field(
        default=None,
        max_length=4000,
        description="Rank facts by relevance to this; omit for the most recent facts.",
    )
    categories: list[FactCategory] | None = Field(
        default=None, description="Only these fact categories (default: the extended ones)."
    )
    limit: int | None = Field(default=None, ge=1, le=100, description="How many facts.")


class ProposeFactArgs(ToolArguments):
    content: str = Field(min_length=1, max_length=20_000, description="The fact, in full.")
    category: FactCategory = Field(
        description=(
            "adr: an architecture decision; procedure: how something is done; convention: a "
            "team rule; entity_definition: what a term means; core_policy: humans only."
        )
    )
    tags: list[str] = Field(default_factory=list, max_length=32, description="Labels.")
    fact_id: UUID | None = Field(
        default=None, description="To revise an existing fact: its id (same category)."
    )
    justification: str = Field(
        default="",
        max_length=4000,
        description="Why the org should know this; required if it needs a human's approval.",
    )


class RetractFactArgs(DestructiveArguments):
    fact_id: UUID = Field(description="The id of the org fact to retract.")


def _fact_lines(facts) -> str:
    return "\n".join(f"- [{f.fact_id}] ({f.category}) {f.content}" for f in facts)


def get_org_policies(ctx: ToolContext, args: PoliciesArgs) -> ToolResult:
    items = selectors.policies(company=ctx.principal.company)
    text = "\n".join(f"- {p.content}" for p in items) or "The company has no core policies."
    return ToolResult(text, {"results": json_ready(PolicySerializer(items, many=True).data)})


def query_org_facts(ctx: ToolContext, args: FactQueryArgs) -> ToolResult:
    query = OrgMemoryQuery(
        context=(args.query or "").strip() or None,
        categories=frozenset(args.categories) if args.categories else None,
        limit=args.limit,
    )
    facts = selectors.query_facts(company=ctx.principal.company, query=query)
    return ToolResult(
        _fact_lines(facts) or "No org facts match.",
        {"as_of": None, "results": json_ready(ScoredFactSerializer(facts, many=True).data)},
    )


def propose_org_fact(ctx: ToolContext, args: ProposeFactArgs) -> ToolResult:
    """Publish when the write rules allow it; otherwise file a write-access request."""
    principal = ctx.principal
    company = principal.company
    decision = explain_write_access(
        company_config(company).org_memory.write_access,
        OrgFactCategory(args.category),
        author_for(principal),
    )
    if decision.allowed or not decision.can_request:
        # A denial that cannot become a request is raised (and audited) by the service.
        entry = fact_publish(
            company=company,
            actor=principal,
            content=args.content,
            category=args.category,
            tags=args.tags,
            fact_id=args.fact_id,
        )
        fact = selectors.fact_state(company=company, fact_id=entry.fact_id)
        return ToolResult(
            f"Published org fact {fact.fact_id} (version {fact.version}).",
            {"outcome": "published", "fact": json_ready(ScoredFactSerializer(fact).data)},
        )
    request = write_request_file(
        company=company,
        actor=principal,
        content=args.content,
        category=args.category,
        tags=args.tags,
        justification=args.justification,
        fact_id=args.fact_id,
    )
    return ToolResult(
        f"You may not publish {args.category} facts yourself ({decision.reason}); filed "
        f"write-access request {request.pk} for a human to approve.",
        {"outcome": "requested", "write_request": json_ready(WriteRequestSerializer(request).data)},
    )


def retract_org_fact(ctx: ToolContext, args: RetractFactArgs) -> ToolResult:
    entry = fact_retract(
        company=ctx.principal.company,
        actor=ctx.principal,
        fact_id=args.fact_id,
        reason=ctx.confirmation.reason,
    )
    return ToolResult(
        f"Org fact {args.fact_id} retracted (version {entry.version}).",
        {"fact_id": str(args.fact_id), "retracted": True, "version": entry.version},
    )


ORG_TOOLS = (
    ToolSpec(
        "get_org_policies",
        "The company's core policies: rules that always apply to your work.",
        PoliciesArgs,
        get_org_policies,
        group="org",
    ),
    ToolSpec(
        "query_org_facts",
        "Search the organisation's facts (architecture decisions, procedures, conventions, "
        "definitions) by relevance to a query.",
        FactQueryArgs,
        query_org_facts,
        group="org",
    ),
    ToolSpec(
        "propose_org_fact",
        "Add or revise an org fact. Publishes it when your seniority allows the category; "
        "otherwise files a write-access request for a human (give a justification) and says so.",
        ProposeFactArgs,
        propose_org_fact,
        group="org",
    ),
    ToolSpec(
        "retract_org_fact",
        "Retract an org fact (the write rules of its category apply). Requires confirm: true "
        "and a reason.",
        RetractFactArgs,
        retract_org_fact,
        group="org",
    ),
)


def register_org_tools() -> None:
    for spec in ORG_TOOLS:
        register_tool(spec)
