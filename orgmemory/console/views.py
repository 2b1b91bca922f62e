"""Console pages for decisions: the inbox, an item's page, approve / reject.

Every decision goes through ``approval_decide`` / ``write_request_decide``; a domain error
(a concurrent decision's 409, a missing reason) is shown on the page, never as an error page.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from orgmemory import inbox, selectors
from orgmemory.approval_presenters import ApprovalPresenter, presenter_for
from orgmemory.console.forms import InboxFilterForm
from orgmemory.evidence_links import report_links
from orgmemory.services.approvals import (
    APPROVE,
    DECIDERS_ONLY,
    REJECT,
    approval_decide,
)
from orgmemory.services.write_requests import write_request_decide
from persistence.console.access import (
    SESSION_KEY,
    ConsoleUser,
    console_user,
    console_view,
    select_company,
)
from synthorg.errors import AccessDeniedError, DomainError, NotFoundError


@console_view
def inbox_view(request, user: ConsoleUser):
    """One page of the inbox; a bad filter value is a form error (400), not a 500.

    A member of several companies who has not picked one yet lands on the company with
    pending decisions (the busiest), not on the first by name."""
    if SESSION_KEY not in request.session and len(user.companies) > 1:
        busiest = inbox.busiest_company(user.companies)
        if busiest is not None:
            select_company(request, busiest.slug)
            user = console_user(request) or user
            request.console = user
    data = request.GET.copy()
    data.setdefault("status", "pending")
    form = InboxFilterForm(
        data, action_types=inbox.action_types(company=user.company), company=user.company
    )
    box, status = None, 200
    if form.is_valid():
        box = inbox.inbox_page(
            company=user.company, filters=form.filters(), page=form.page_number()
        )
    else:
        status = 400
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "console/approvals/inbox.html",
        {
            "section": "inbox",
            "inbox": box,
            "form": form,
            "counts": inbox.status_counts(company=user.company),
            "query": query.urlencode(),
            # the filter panel opens when a filter besides the status tabs is applied
            "filtered": any(v for k, v in request.GET.items() if k not in ("status", "page")),
            "webhook_failures": inbox.webhook_failures(company=user.company),
        },
        status=status,
    )


def _item_context(request, user: ConsoleUser, item_id):
    try:
        item = inbox.approval_item_for(principal=user.principal, item_id=item_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    presenter = presenter_for(item.action_type)
    proposal = item.metadata.get("proposal") if isinstance(item.metadata, dict) else None
    proposal = proposal if isinstance(proposal, dict) else None
    evidence = item.evidence if isinstance(item.evidence, dict) else {}
    return {
        "section": "inbox",
        "item": item,
        "presenter": presenter,
        "effective_status": inbox.effective_status(item),
        "proposal": proposal,
        "evidence": evidence,
        "evidence_json": json.dumps(evidence, indent=2, sort_keys=True, default=str),
        "metadata_json": json.dumps(item.metadata, indent=2, sort_keys=True, default=str),
        "deliveries": item.webhook_deliveries.order_by("-created_at")[:10],
        "decisions": item.decisions.select_related("actor_user").order_by("id"),
        "verdict": presenter.verdict(evidence.get("verdict")),
        "edit_fields": _edit_fields(presenter, proposal, {}),
        "proposal_rows": _proposal_rows(proposal),
        "report_links": report_links(
            company=user.company, report_ids=_report_ids(evidence.get("report_ids"))
        ),
    }


def _edit_fields(presenter: ApprovalPresenter, proposal, posted) -> list[dict]:
    """The presenter's editable fields the proposal has, with the values to show (what the
    approver posted, else the proposal's; a ``many`` field one line per item)."""
    if proposal is None:
        return []
    fields = []
    for spec in presenter.editable:
        if spec.name not in proposal:
            continue
        value = posted.get(spec.name, proposal[spec.name])
        if spec.many:
            value = "\n".join(str(v) for v in value) if isinstance(value, list) else ""
        fields.append({"spec": spec, "value": value})
    return fields


def _proposal_rows(proposal) -> list[tuple[str, list[str]]]:
    """A proposal no presenter renders, as (key, lines): a list one line per item, anything
    else as JSON unless it is text."""
    rows = []
    for name, value in (proposal or {}).items():
        if isinstance(value, list):
            lines = [v if isinstance(v, str) else json.dumps(v, default=str) for v in value]
        else:
            lines = [value if isinstance(value, str) else json.dumps(value, default=str)]
        rows.append((str(name), lines or [""]))
    return rows


def _report_ids(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


EDIT_PREFIX = "edit_"


def _posted_edits(post, presenter: ApprovalPresenter) -> dict:
    """The proposal parts the approve form sent (``edit_<name>``; a ``many`` field one item
    per non-blank line). A name the presenter does not know is passed on as sent, for the
    service to refuse."""
    edits: dict = {}
    for key in post:
        if not key.startswith(EDIT_PREFIX):
            continue
        name = key.removeprefix(EDIT_PREFIX)
        value = post.get(key, "")
        spec = presenter.editable_field(name)
        if spec is not None and spec.many:
            edits[name] = [line for line in value.splitlines() if line.strip()]
        else:
            edits[name] = value
    return edits


def _presenter_of(user: ConsoleUser, item_id) -> ApprovalPresenter:
    try:
        item = inbox.approval_item_for(principal=user.principal, item_id=item_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    return presenter_for(item.action_type)


@console_view
def item_view(request, user: ConsoleUser, item_id):
    return render(request, "console/approvals/item.html", _item_context(request, user, item_id))


@require_POST
@console_view
def item_decide(request, user: ConsoleUser, item_id):
    decision = request.POST.get("decision", "")
    reason = request.POST.get("reason", "")
    edits = _posted_edits(request.POST, _presenter_of(user, item_id))
    try:
        item = approval_decide(
            company=user.company,
            actor=user.principal,
            item_id=item_id,
            decision=decision,
            reason=reason,
            edits=edits or None,
        )
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    except DomainError as exc:
        context = _item_context(request, user, item_id)
        context.update({"error": exc.detail, "error_code": exc.code, "reason": reason})
        if edits:
            context["edit_fields"] = _edit_fields(context["presenter"], context["proposal"], edits)
        status = 409 if exc.status == 409 else exc.status
        return render(request, "console/approvals/item.html", context, status=status)
    verb = "Approved" if decision == APPROVE else "Rejected"
    messages.success(request, f"{verb}: {item.title}")
    return redirect("approvals_console:item", item_id=item.pk)


def _request_context(user: ConsoleUser, request_id):
    try:
        found = selectors.write_request_for(principal=user.principal, request_id=request_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    current = None
    if found.fact_id is not None:
        try:
            current = selectors.fact_state(company=user.company, fact_id=found.fact_id)
        except NotFoundError:
            current = None
    return {"section": "inbox", "wr": found, "current": current}


@console_view
def write_request_view(request, user: ConsoleUser, request_id):
    return render(
        request, "console/approvals/write_request.html", _request_context(user, request_id)
    )


@require_POST
@console_view
def write_request_decide_view(request, user: ConsoleUser, request_id):
    decision = request.POST.get("decision", "")
    reason = request.POST.get("reason", "")
    try:
        if not user.can_decide:  # the API's IsPrincipal keeps viewers out the same way
            raise AccessDeniedError(DECIDERS_ONLY, code="approval_decider_required")
        decided = write_request_decide(
            company=user.company,
            actor=user.principal,
            request_id=request_id,
            decision=decision,
            reason=reason,
        )
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    except DomainError as exc:
        context = _request_context(user, request_id)
        context.update({"error": exc.detail, "error_code": exc.code, "reason": reason})
        status = exc.status if exc.status in (400, 409) else 403
        return render(request, "console/approvals/write_request.html", context, status=status)
    verb = "Approved" if decision == APPROVE else "Rejected" if decision == REJECT else decision
    messages.success(request, f"{verb} the write request.")
    return redirect("approvals_console:write-request", request_id=decided.pk)
