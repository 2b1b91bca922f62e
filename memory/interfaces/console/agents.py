"""Console agents pages: the company's agents, one agent's profile (levels, keys, what it
remembers), and its API keys — issued with a name and an expiry, shown once, revoked after a
confirmation. Admins manage keys; operators and viewers read. Writes go through
``persistence.services.agents`` (the same services the admin and the API use)."""

from __future__ import annotations

import re

from django.contrib import messages
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from memory.core.selectors.memories import agent_memories
from memory.ingestion.models import DreamRequest
from memory.interfaces.console.agent_forms import (
    AgentProfileForm,
    KeyCreateForm,
    SubjectEraseForm,
)
from persistence.console.access import ConsoleUser, console_view
from persistence.models import Agent, AgentApiKey
from persistence.services.agents import agent_update, api_key_issue, api_key_revoke
from persistence.services.erasure import subject_erase
from synthorg.enums import MemoryCategory
from synthorg.errors import AccessDeniedError, DomainError

ADMIN_MANAGES_KEYS = "Only an admin of this company manages API keys."
DREAM_REQUESTS_SHOWN = 10
SHORT_ROLE_CHARS = 32
_ROLE_CLAUSE = re.compile(r"[.;:,(]|\s[—–-]\s")


def short_role(role: str) -> str:
    """The agents table's Role: the role's first clause (up to ``. ; : , (`` or a dash),
    cut at a word to :data:`SHORT_ROLE_CHARS` with an ellipsis. The whole text is the
    cell's tooltip and on the agent's page."""
    text = " ".join(role.split())
    first = _ROLE_CLAUSE.split(text, maxsplit=1)[0].strip() or text
    if len(first) <= SHORT_ROLE_CHARS:
        return first if first == text else first + "…"
    cut = first[: SHORT_ROLE_CHARS + 1].rsplit(" ", 1)[0] or first[:SHORT_ROLE_CHARS]
    return cut.rstrip() + "…"


def _agent(user: ConsoleUser, agent_id: int) -> Agent:
    agent = Agent.objects.filter(company=user.company, pk=agent_id).first()
    if agent is None:
        raise Http404("No such agent in this company.")
    return agent


def _key(agent: Agent, key_id: int) -> AgentApiKey:
    key = AgentApiKey.objects.filter(agent=agent, pk=key_id).first()
    if key is None:
        raise Http404("No such key for this agent.")
    return key


@console_view
def agents_view(request, user: ConsoleUser):
    return _agents_page(request, user)


def _agents_page(request, user: ConsoleUser, *, status=200, **extra):
    now = timezone.now()
    usable = Q(api_keys__revoked_at__isnull=True) & (
        Q(api_keys__expires_at__isnull=True) | Q(api_keys__expires_at__gt=now)
    )
    agents = (
        Agent.objects.filter(company=user.company)
        .annotate(usable_keys=Count("api_keys", filter=usable))
        .order_by("name")
    )
    rows = list(agents)
    for agent in rows:
        agent.short_role = short_role(agent.role)
    context = {
        "section": "agents",
        "agents": rows,
        "subject_form": extra.pop("subject_form", None) or SubjectEraseForm(),
        **extra,
    }
    return render(request, "console/agents/list.html", context, status=status)


@require_POST
@console_view
def subject_erase_view(request, user: ConsoleUser):
    """Erase one end user across every agent of the company (admins; the service checks)."""
    form = SubjectEraseForm(request.POST)
    if not form.is_valid():
        return _agents_page(request, user, subject_form=form, status=400)
    try:
        receipt = subject_erase(
            company=user.company,
            subject=form.cleaned_data["subject"],
            principal=user.principal,
            reason=form.cleaned_data["reason"],
            via="console",
        )
    except DomainError as exc:
        form.add_error(None, exc.detail)
        return _agents_page(request, user, subject_form=form, status=exc.status)
    return _agents_page(request, user, receipt=receipt)


def _agent_page(request, user: ConsoleUser, agent: Agent, *, status=200, **extra):
    now = timezone.now()
    counts = dict(
        agent_memories(agent=agent, now=now)
        .order_by()
        .values_list("category")
        .annotate(n=Count("id"))
    )
    categories = [(c.value, counts.get(c.value, 0)) for c in MemoryCategory]
    lessons = agent_memories(agent=agent, now=now).filter(lesson__isnull=False).count()
    keys = list(AgentApiKey.objects.filter(agent=agent).order_by("-created_at", "-id"))
    for key in keys:
        key.state = (
            "revoked"
            if key.revoked_at is not None
            else ("expired" if not key.is_usable(now) else "active")
        )
    context = {
        "section": "agents",
        "agent": agent,
        "categories": categories,
        "memory_total": sum(counts.values()),
        "lessons": lessons,
        "keys": keys,
        "dream_requests": list(
            DreamRequest.objects.filter(company=agent.company_id, agent=agent)
            .select_related("run")
            .order_by("-requested_at", "-id")[:DREAM_REQUESTS_SHOWN]
        ),
        "form": extra.pop("form", None) or KeyCreateForm(),
        "profile_form": extra.pop("profile_form", None) or AgentProfileForm.for_agent(agent),
    }
    context.update(extra)
    return render(request, "console/agents/agent.html", context, status=status)


@console_view
def agent_view(request, user: ConsoleUser, agent_id: int):
    return _agent_page(request, user, _agent(user, agent_id))


@require_POST
@console_view
def agent_profile_view(request, user: ConsoleUser, agent_id: int):
    """Change role, department, seniority, autonomy, memory level or activity (admins)."""
    agent = _agent(user, agent_id)
    form = AgentProfileForm(request.POST)
    if not form.is_valid():
        return _agent_page(request, user, agent, profile_form=form, status=400)
    try:
        agent_update(agent=agent, principal=user.principal, **form.cleaned_data)
    except DomainError as exc:
        form.add_error(None, exc.detail)
        return _agent_page(request, user, agent, profile_form=form, status=exc.status)
    messages.success(request, "Agent saved.")
    return redirect("agents_console:agent", agent_id=agent.pk)


@require_POST
@console_view
def key_create_view(request, user: ConsoleUser, agent_id: int):
    agent = _agent(user, agent_id)
    form = KeyCreateForm(request.POST)
    if not form.is_valid():
        return _agent_page(request, user, agent, form=form, status=400)
    try:
        issued = api_key_issue(
            agent=agent,
            name=form.cleaned_data["name"],
            expires_at=form.expires_at(),
            principal=user.principal,
        )
    except DomainError as exc:
        field = "expires_on" if exc.code == "invalid_expiry" else None
        form.add_error(field, exc.detail)
        return _agent_page(request, user, agent, form=form, status=exc.status)
    # The raw key exists only in this response: never stored, never cached, never shown again.
    response = render(
        request,
        "console/agents/key_created.html",
        {"section": "agents", "agent": agent, "key": issued.key, "raw_key": issued.raw_key},
        status=201,
    )
    response["Cache-Control"] = "no-store"
    return response


@console_view
def key_revoke_view(request, user: ConsoleUser, agent_id: int, key_id: int):
    """GET: the confirmation page; POST: revoke (the service checks the role)."""
    agent = _agent(user, agent_id)
    key = _key(agent, key_id)
    if request.method == "POST":
        try:
            api_key_revoke(key=key, principal=user.principal)
        except DomainError as exc:
            return _agent_page(request, user, agent, key_error=exc.detail, status=exc.status)
        messages.success(request, f"Key “{key.name or key.prefix}” revoked: it no longer works.")
        return redirect("agents_console:agent", agent_id=agent.pk)
    if not user.can_administer:
        error = AccessDeniedError(ADMIN_MANAGES_KEYS)
        return _agent_page(request, user, agent, key_error=error.detail, status=error.status)
    if key.revoked_at is not None:
        return redirect("agents_console:agent", agent_id=agent.pk)
    return render(
        request, "console/agents/key_revoke.html", {"section": "agents", "agent": agent, "key": key}
    )
