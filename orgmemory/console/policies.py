"""The Core policies page: the block every agent receives, and its policies' versions.

Everyone of the company reads it; admins change it (the services refuse other roles). Every
change goes through ``orgmemory.services.policies``; a domain error (a stale version's 409,
a role's 403) is shown on the page with its status, never as an error page.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_naive, make_aware
from django.views.decorators.http import require_POST

from orgmemory.selectors.facts import fact_history
from orgmemory.selectors.policies import core_policy_block_of, policies, policy_deliveries
from orgmemory.services.policies import (
    core_policies_adopt,
    policy_add,
    policy_edit,
    policy_reorder,
    policy_retire,
)
from persistence.access import ROLE_RANK
from persistence.console.access import ConsoleUser, console_view
from persistence.selectors.config import company_config
from synthorg.errors import DomainError, InvalidInputError, NotFoundError
from synthorg.retrieval.tokens import estimate_tokens

BAD_AS_OF = "as_of must be a date and time, e.g. 2026-05-01T09:00."


def _as_of(request):
    raw = request.GET.get("as_of", "").strip()
    if not raw:
        return None
    parsed = parse_datetime(raw)
    if parsed is None:
        raise InvalidInputError(BAD_AS_OF, code="invalid_as_of")
    return make_aware(parsed) if is_naive(parsed) else parsed


def _context(request, user: ConsoleUser) -> dict:
    error = None
    try:
        as_of = _as_of(request)
    except InvalidInputError as exc:
        as_of, error = None, exc.detail
    items = policies(company=user.company, as_of=as_of)
    shown = core_policy_block_of(items)
    block = shown.text if shown else ""
    tokens = estimate_tokens(block)
    current = shown if as_of is None else core_policy_block_of(policies(company=user.company))
    threshold = company_config(user.company).org_memory.core_policies_token_warning
    return {
        "section": "policies",
        "policies": items,
        "policy_block": block,
        "tokens": tokens,
        "threshold": threshold,
        "over_threshold": tokens > threshold,
        "as_of": as_of,
        "as_of_raw": request.GET.get("as_of", ""),
        "unversioned": [item for item in items if item.source == "config"],
        "current_revision": current.revision if current else "",
        "deliveries": policy_deliveries(company=user.company, current=current),
        "can_edit": ROLE_RANK.get(user.role, -1) >= ROLE_RANK["admin"],
        "order": ",".join(str(item.fact_id) for item in items if item.fact_id),
        "error": error,
    }


@console_view
def policies_view(request, user: ConsoleUser):
    return render(request, "console/policies/list.html", _context(request, user))


@console_view
def policy_history_view(request, user: ConsoleUser, fact_id):
    try:
        rows = fact_history(company=user.company, fact_id=fact_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    if rows[0].category != "core_policy":
        raise Http404("Not a core policy.")
    return render(
        request,
        "console/policies/history.html",
        {"section": "policies", "rows": rows, "fact_id": fact_id},
    )


def _version(request) -> int | None:
    raw = request.POST.get("expected_version", "")
    return int(raw) if raw.isdigit() else None


def _moved(order: list[str], fact_id: str, direction: str) -> list[str]:
    if fact_id not in order:
        return order
    index = order.index(fact_id)
    target = index - 1 if direction == "up" else index + 1
    if 0 <= target < len(order):
        order[index], order[target] = order[target], order[index]
    return order


@require_POST
@console_view
def policy_change_view(request, user: ConsoleUser):
    """One POST endpoint for every change: ``action`` is add, edit, retire, move or adopt."""
    action = request.POST.get("action", "")
    fact_id = request.POST.get("fact_id", "")
    content = request.POST.get("content", "")
    actor, company = user.principal, user.company
    try:
        if action == "add":
            policy_add(company=company, actor=actor, content=content)
            done = "Core policy added."
        elif action == "edit":
            policy_edit(
                company=company,
                actor=actor,
                fact_id=fact_id,
                content=content,
                expected_version=_version(request),
            )
            done = "Core policy saved as a new version."
        elif action == "retire":
            policy_retire(
                company=company,
                actor=actor,
                fact_id=fact_id,
                expected_version=_version(request),
                reason=request.POST.get("reason", ""),
            )
            done = "Core policy retired."
        elif action in ("up", "down"):
            order = [i for i in request.POST.get("order", "").split(",") if i]
            policy_reorder(company=company, actor=actor, fact_ids=_moved(order, fact_id, action))
            done = "Order saved."
        elif action == "adopt":
            core_policies_adopt(company=company, actor=actor)
            done = "The config's core policies are now versioned."
        else:
            raise InvalidInputError(f"Unknown action {action!r}.", code="invalid_action")
    except DomainError as exc:
        context = _context(request, user)
        context.update({"error": exc.detail, "error_code": exc.code, "content": content})
        return render(request, "console/policies/list.html", context, status=exc.status)
    messages.success(request, done)
    return redirect("policies_console:list")
