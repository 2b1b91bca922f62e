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
from synthorg.errors import AccessDeniedError
from synthorg.tools import (
    DestructiveArguments,
    ToolArguments,
    ToolContext,
    ToolResult,
    ToolSpec,
    json_ready,
    register_tool,
)

AGENTS_ONLY = "Only agents ask for approval through this tool."
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


class RequestApprovalArgs(ToolArguments):
    action_type: str = Field(
        min_length=1, max_length=100, description="What you want to do, e.g. 'deploy:prod'."
    )
    title: str = Field(min_length=1, max_length=200, description="One line for the human.")
    description: str = Field(
        default="", max_length=10_000, description="Why, what could go wrong, how to undo it."
    )
    risk_level: Literal["low", "medium", "high", "critical"] = Field(
        description="Your honest estimate of the risk."
    )
    ttl_seconds: int | None = Field(
        default=None,
        ge=60,
        le=7 * 24 * 3600,
        description="How long the request stays open (default depends on the action type).",
    )


class ListApprovalsArgs(ToolArguments):
    status: Literal["pending", "approved", "rejected", "expired"] | None = Field(
        default=None, description="Only items in this state."
    )
    limit: int = Field(default=20, ge=1, le=100, description="How many items, newest first.")


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


def request_approval(ctx: ToolContext, args: RequestApprovalArgs) -> ToolResult:
    from datetime import timedelta

    from orgmemory.api.approval_serializers import ApprovalItemSerializer
    from orgmemory.services.approvals import approval_request

    principal = ctx.principal
    if not principal.is_agent:
        raise AccessDeniedError(AGENTS_ONLY, code="agents_only")
    item = approval_request(
        company=principal.company,
        action_type=args.action_type,
        title=args.title,
        description=args.description,
        risk_level=args.risk_level,
        source=ctx.via,
        requester_agent=principal.agent,
        ttl=timedelta(seconds=args.ttl_seconds) if args.ttl_seconds is not None else None,
    )
    return ToolResult(
        f"Approval requested: item {item.pk} is pending a human decision "
        f"(expires {item.expires_at:%Y-%m-%d %H:%M} UTC).",
        json_ready(ApprovalItemSerializer(item).data),
    )


def list_my_approvals(ctx: ToolContext, args: ListApprovalsArgs) -> ToolResult:
    from orgmemory.api.approval_serializers import ApprovalItemSerializer
    from orgmemory.inbox import approval_items_for

    items = list(approval_items_for(principal=ctx.principal, status=args.status)[: args.limit])
    text = "\n".join(f"- [{i.pk}] {i.status}: {i.title} ({i.action_type})" for i in items)
    return ToolResult(
        text or "You have no approval items.",
        {"results": json_ready(ApprovalItemSerializer(items, many=True).data)},
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
        "request_approval",
        "Ask a human to approve an action before you take it. Returns the item's id; check "
        "its status with list_my_approvals.",
        RequestApprovalArgs,
        request_approval,
        group="approvals",
    ),
    ToolSpec(
        "list_my_approvals",
        "Your own approval requests and their status (pending, approved, rejected, expired).",
        ListApprovalsArgs,
        list_my_approvals,
        group="approvals",
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
