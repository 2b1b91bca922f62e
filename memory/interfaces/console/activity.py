"""What agents see and did: the context preview (exactly what ``/memories/context`` would
answer an agent, through the same :class:`MemoryService` call, as a dry run that records
nothing) and the request log of agents' search and context calls."""

from __future__ import annotations

import json

from django.http import Http404
from django.shortcuts import render

from memory.core.selectors.request_log import RequestLogFilters, request_log_page
from memory.interfaces.api.serializers import context_payload
from memory.interfaces.console.forms import (
    DEFAULT_BUDGET,
    ContextPreviewForm,
    RequestLogFilterForm,
)
from memory.interfaces.service import MemoryService
from memory.prompting.context import ContextRequest
from persistence.console.access import ConsoleUser, console_view
from persistence.models import Agent
from persistence.principal import Principal
from persistence.selectors.config import company_config
from synthorg.errors import DomainError

LOG_PAGE = 50


@console_view
def context_preview_view(request, user: ConsoleUser):
    submitted = "query" in request.GET
    form = (
        ContextPreviewForm(request.GET, company=user.company)
        if submitted
        else ContextPreviewForm(None, company=user.company)
    )
    if not submitted:
        form.initial = {"token_budget": DEFAULT_BUDGET, "include_org": True}
    context = {"section": "preview", "form": form}
    status = 200
    if submitted and not form.is_valid():
        status = 400
    elif submitted:
        data = form.cleaned_data
        agent = (
            Agent.objects.select_related("company")
            .filter(company=user.company, pk=data["agent"])
            .first()
        )
        if agent is None:
            raise Http404("No such agent in this company.")
        service = MemoryService(Principal.for_agent(agent), via="console")
        try:
            prepared = service.context(
                ContextRequest.build(
                    query_text=data["query"],
                    token_budget=data["token_budget"],
                    include_org=data["include_org"],
                ),
                dry_run=True,
            )
        except DomainError as exc:
            form.add_error(None, exc.detail)
            status = exc.status
        else:
            payload = context_payload(prepared, service.strategy)
            context.update(
                agent=agent,
                prepared=prepared,
                payload_json=json.dumps(payload, indent=2, ensure_ascii=False),
                strategy=service.strategy.strategy_name,
            )
    return render(request, "console/memory/context_preview.html", context, status=status)


@console_view
def request_log_view(request, user: ConsoleUser):
    form = RequestLogFilterForm(request.GET, company=user.company)
    config = company_config(user.company).memory.request_log
    context = {"section": "requests", "form": form, "config": config}
    if not form.is_valid():
        return render(request, "console/memory/request_log.html", context, status=400)
    data = form.cleaned_data
    page = data["page"] or 1
    entries, has_next = request_log_page(
        company=user.company,
        filters=RequestLogFilters(
            agent_id=data["agent"],
            kind=data["kind"] or None,
            degraded_only=data["degraded"],
            query=data["q"],
        ),
        page=page,
        size=LOG_PAGE,
    )
    params = request.GET.copy()
    params.pop("page", None)
    context.update(
        entries=entries,
        page=page,
        has_next=has_next,
        base_query=params.urlencode(),
    )
    return render(request, "console/memory/request_log.html", context)
