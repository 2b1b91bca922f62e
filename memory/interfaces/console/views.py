"""Console memory browser: pick an agent, list or search (the real hybrid search) its
memories, open one, delete or correct it with a reason — through the memory services."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.db.models import Count, Q
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from memory.core.models.memory import live_q
from memory.core.retrieval.query import MemoryQuery
from memory.core.selectors.memories import (
    agent_memories,
    agent_memory_get,
    shared_knowledge_enabled,
    shared_memories,
    shared_memory_get,
)
from memory.core.selectors.search import memory_search
from memory.core.services.edit import memory_correct, memory_delete
from memory.interfaces.console.forms import OrgSkillAddForm
from memory.interfaces.console.provenance import memory_corrections, memory_provenance
from memory.procedural.evolver.draft_retry import evolver_draft_requeue
from memory.procedural.evolver.models import DraftFailure, EvolverReport
from memory.procedural.models import ExecutionReport
from memory.procedural.services.capture import execution_capture_requeue
from memory.procedural.services.compression import experience_compress_run
from memory.procedural.services.operator_skills import operator_skill_publish
from memory.procedural.services.wiki import wiki_archive, wiki_export_run
from memory.procedural.skills import org_skills
from memory.prompting.llm_checks import llm_request_deadline
from persistence.console.access import ConsoleUser, console_view
from persistence.models import Agent
from persistence.selectors.config import company_config
from synthorg.enums import MemoryCategory
from synthorg.errors import DomainError, InvalidInputError, NotFoundError

PAGE = 50
MAX_PAGE = 10_000
ROLE_CANNOT_CHANGE = "Your role can read memories but not change them."
ROLE_CANNOT_RUN = "Your role can read execution reports; operators and admins run these."
ROLE_CANNOT_ADD_SKILL = "Your role can read org skills; operators and admins add them."
SKILL_ADDED = "Org skill {name} published: agents retrieve it with the company's procedures."
SEARCH_LIMIT = 20


def _agent(user: ConsoleUser, agent_id: int) -> Agent:
    agent = (
        Agent.objects.select_related("company").filter(company=user.company, pk=agent_id).first()
    )
    if agent is None:
        raise Http404("No such agent in this company.")
    return agent


@console_view
def agents_view(request, user: ConsoleUser):
    now = timezone.now()
    agents = (
        Agent.objects.filter(company=user.company)
        .annotate(
            live_memories=Count(
                "memories",
                filter=Q(memories__is_shared=False) & live_q(now, "memories__"),
            )
        )
        .order_by("name")
    )
    return render(request, "console/memory/agents.html", {"section": "memories", "agents": agents})


class SharedFilterForm(forms.Form):
    category = forms.ChoiceField(
        choices=[("", "all categories")] + [(c.value, c.value) for c in MemoryCategory],
        required=False,
    )
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_PAGE)


@console_view
def shared_view(request, user: ConsoleUser):
    """The company's live shared knowledge, newest first, a page at a time (read-only)."""
    form = SharedFilterForm(request.GET)
    context = {
        "section": "shared",
        "form": form,
        "entries": [],
        "page": 1,
        "shared_off": not shared_knowledge_enabled(user.company),
    }
    if not form.is_valid():
        return render(request, "console/memory/shared.html", context, status=400)
    category = form.cleaned_data["category"]
    page = form.cleaned_data["page"] or 1
    # Humans inspect what the company holds, also while agents have shared knowledge off
    # (as they inspect agents' private memories).
    query = shared_memories(company=user.company, require_enabled=False).select_related("agent")
    if category:
        query = query.filter(category=category)
    start = (page - 1) * PAGE
    # One row past the page tells whether there is a next one, without counting them all.
    rows = list(query[start : start + PAGE + 1])
    if page > 1 and not rows:
        raise Http404("No such page.")
    context.update(entries=rows[:PAGE], page=page, has_next=len(rows) > PAGE, category=category)
    return render(request, "console/memory/shared.html", context)


@console_view
def agent_memories_view(request, user: ConsoleUser, agent_id: int):
    agent = _agent(user, agent_id)
    query_text = request.GET.get("q", "").strip()[:500]
    hits, degraded, memories = None, [], None
    if query_text:
        result = memory_search(
            agent=agent,
            query=MemoryQuery(text=query_text, limit=SEARCH_LIMIT),
            include_shared=False,
        )
        hits, degraded = result.hits, result.degraded
    else:
        memories = list(agent_memories(agent=agent)[:PAGE])
    return render(
        request,
        "console/memory/list.html",
        {
            "section": "memories",
            "agent": agent,
            "q": query_text,
            "hits": hits,
            "degraded": degraded,
            "memories": memories,
        },
    )


def _memory(agent: Agent, memory_id):
    try:
        return agent_memory_get(agent=agent, memory_id=memory_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc


def _detail(request, user: ConsoleUser, agent: Agent, memory_id, *, status=200, **extra):
    memory = _memory(agent, memory_id)
    context = {
        "section": "memories",
        "agent": agent,
        "memory": memory,
        "provenance": memory_provenance(memory),
        "corrections": memory_corrections(memory),
    }
    context.update(extra)
    return render(request, "console/memory/detail.html", context, status=status)


@console_view
def memory_view(request, user: ConsoleUser, agent_id: int, memory_id):
    return _detail(request, user, _agent(user, agent_id), memory_id)


@console_view
def shared_memory_view(request, user: ConsoleUser, memory_id):
    """One shared entry (an org skill pool entry included; superseded ones too): read-only,
    its publisher's agent page links back."""
    try:
        memory = shared_memory_get(company=user.company, memory_id=memory_id, require_enabled=False)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    context = {
        "section": "shared",
        "agent": memory.agent,
        "memory": memory,
        "shared": True,
        "provenance": memory_provenance(memory),
        "corrections": memory_corrections(memory),
    }
    return render(request, "console/memory/detail.html", context)


def _delete_confirm(request, agent: Agent, memory, *, status=200, **extra):
    context = {"section": "memories", "agent": agent, "memory": memory}
    context.update(extra)
    return render(request, "console/memory/delete.html", context, status=status)


@console_view
def memory_delete_view(request, user: ConsoleUser, agent_id: int, memory_id):
    """GET: the confirmation step (the memory, a required reason); POST: delete."""
    agent = _agent(user, agent_id)
    memory = _memory(agent, memory_id)
    if request.method != "POST":
        if not user.can_decide:
            return _detail(
                request, user, agent, memory_id, delete_error=ROLE_CANNOT_CHANGE, status=403
            )
        return _delete_confirm(request, agent, memory)
    reason = request.POST.get("reason", "")
    try:
        memory_delete(agent=agent, memory_id=memory_id, principal=user.principal, reason=reason)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    except DomainError as exc:
        if exc.status == 403:
            return _detail(
                request, user, agent, memory_id, delete_error=exc.detail, status=exc.status
            )
        return _delete_confirm(
            request, agent, memory, delete_error=exc.detail, reason=reason, status=exc.status
        )
    messages.success(request, "Memory deleted.")
    return redirect("memory_console:agent", agent_id=agent.pk)


@require_POST
@console_view
def memory_correct_view(request, user: ConsoleUser, agent_id: int, memory_id):
    agent = _agent(user, agent_id)
    content = request.POST.get("content", "")
    reason = request.POST.get("reason", "")
    try:
        memory_correct(
            agent=agent,
            memory_id=memory_id,
            content=content,
            reason=reason,
            principal=user.principal,
        )
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    except (DomainError, ValueError) as exc:
        detail = getattr(exc, "detail", None) or "The corrected text is not valid."
        return _detail(
            request,
            user,
            agent,
            memory_id,
            correct_error=detail,
            content=content,
            correct_reason=reason,
            status=getattr(exc, "status", 400),
        )
    messages.success(request, "Memory corrected.")
    return redirect("memory_console:memory", agent_id=agent.pk, memory_id=memory_id)


def _evolver_runs(request, user: ConsoleUser, *, status=200, **extra):
    """The latest runs, each with the draft failures it recorded (reason, attempts, next
    retry, what became of them)."""
    runs = list(EvolverReport.objects.filter(company=user.company).order_by("-started_at")[:50])
    failures: dict = {}
    for draft in (
        DraftFailure.objects.filter(company=user.company, report__in=runs)
        .select_related("item")
        .order_by("created_at", "id")
    ):
        failures.setdefault(draft.report_id, []).append(draft)
    for run in runs:
        run.failed_drafts = failures.get(run.pk, [])
    config = company_config(user.company).memory.procedural.evolver
    context = {
        "section": "evolver",
        "runs": runs,
        "config": config,
        "org_skills": list(org_skills(company=user.company)[:200]),
        "skill_form": OrgSkillAddForm() if user.can_decide else None,
    }
    context.update(extra)
    return render(request, "console/memory/evolver_runs.html", context, status=status)


@console_view
def wiki_zip_view(request, user: ConsoleUser):
    """The company's current wiki export as a zip (any member; 404 before the first export)."""
    try:
        data = wiki_archive(user.company)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    except DomainError as exc:  # the configured root leaves the company's directory
        raise Http404(str(exc)) from exc
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{user.company.slug}-wiki.zip"'
    return response


@console_view
def evolver_runs_view(request, user: ConsoleUser):
    return _evolver_runs(request, user)


@require_POST
@console_view
def org_skill_add_view(request, user: ConsoleUser):
    """Publish a person's org skill through ``operator_skill_publish`` (the service
    ``POST /api/v1/org-skills`` and the admin call), then back to the list (POST/redirect/GET).
    A refusal re-renders the page with the form as typed and the service's status."""
    if not user.can_decide:
        return _evolver_runs(request, user, status=403, skill_error=ROLE_CANNOT_ADD_SKILL)
    form = OrgSkillAddForm(request.POST)
    if not form.is_valid():  # only what Django refuses in any text (a NUL character)
        return _evolver_runs(request, user, status=400, skill_form=form)
    try:
        skill = operator_skill_publish(
            company=user.company, actor=user.principal, data=form.skill_data()
        )
    except InvalidInputError as exc:
        form.add_service_errors(exc.errors or [{"field": None, "message": exc.detail}])
        return _evolver_runs(request, user, status=exc.status, skill_form=form)
    except DomainError as exc:  # the company's write rule refuses people `procedure` facts
        return _evolver_runs(
            request, user, status=exc.status, skill_form=form, skill_error=exc.detail
        )
    messages.success(request, SKILL_ADDED.format(name=skill.name))
    return redirect(reverse("memory_console:evolver-runs") + f"#org-skill-{skill.pk}")


@require_POST
@console_view
def evolver_draft_requeue_view(request, user: ConsoleUser, draft_id):
    try:
        evolver_draft_requeue(principal=user.principal, draft_id=draft_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    except DomainError as exc:
        return _evolver_runs(
            request, user, status=exc.status, requeue_error=exc.detail, requeue_draft=draft_id
        )
    messages.success(request, "Draft re-queued: the LLM drafts it again within a minute.")
    return redirect("memory_console:evolver-runs")


def _executions(request, user: ConsoleUser, *, status=200, **extra):
    reports = (
        ExecutionReport.objects.filter(company=user.company)
        .select_related("agent", "capture")
        .order_by("-created_at", "-id")[:PAGE]
    )
    consolidation = company_config(user.company).memory.consolidation
    context = {
        "section": "executions",
        "reports": reports,
        "compressor_enabled": consolidation.experience_compressor.enabled,
        "wiki_enabled": consolidation.wiki_export.enabled,
    }
    context.update(extra)
    return render(request, "console/memory/executions.html", context, status=status)


@console_view
def executions_view(request, user: ConsoleUser):
    """The company's latest execution reports with their capture status and method, and (for
    operators) the experience compressor and the wiki export run now."""
    return _executions(request, user)


@require_POST
@console_view
def experiences_compress_view(request, user: ConsoleUser):
    """Run the experience compressor now (the service ``POST /api/v1/experiences/compress``
    calls)."""
    if not user.can_decide:
        return _executions(request, user, status=403, run_error=ROLE_CANNOT_RUN)
    try:
        run = experience_compress_run(
            company=user.company, trigger="manual", deadline=llm_request_deadline()
        )
    except DomainError as exc:
        return _executions(request, user, status=exc.status, run_error=exc.detail)
    summary = (
        f"Compressor ran ({run.method}): {run.reports_seen} reports read, {run.compressed} "
        f"compressed, {run.skipped_below_ratio} below the compression ratio, {run.failed} "
        "failed (left for the next run)"
    )
    if run.deferred:
        summary += f"; the request's LLM time budget ran out: {run.deferred} left for the next run"
    messages.success(request, summary + ".")
    return redirect("memory_console:executions")


@require_POST
@console_view
def wiki_export_view(request, user: ConsoleUser):
    """Write the wiki export now (the service ``POST /api/v1/experiences/wiki`` calls)."""
    if not user.can_decide:
        return _executions(request, user, status=403, run_error=ROLE_CANNOT_RUN)
    try:
        export = wiki_export_run(company=user.company, trigger="manual", actor=user.principal)
    except DomainError as exc:
        return _executions(request, user, status=exc.status, run_error=exc.detail)
    messages.success(
        request,
        f"Wiki exported: {export.raw_pages} raw pages, {export.wiki_pages} wiki pages.",
    )
    return redirect("memory_console:executions")


def _execution(request, user: ConsoleUser, report_id, *, status=200, **extra):
    report = (
        ExecutionReport.objects.filter(company=user.company, pk=report_id)
        .select_related("agent", "capture")
        .first()
    )
    if report is None:
        raise Http404("No such execution report in this company.")
    context = {
        "section": "executions",
        "report": report,
        "capture": getattr(report, "capture", None),
        "history": report.capture_history.order_by("id"),
        "lessons": report.lessons.select_related("memory__agent").order_by("created_at"),
        "tool_calls": report.tool_calls if isinstance(report.tool_calls, list) else [],
    }
    context.update(extra)
    return render(request, "console/memory/execution.html", context, status=status)


@console_view
def execution_view(request, user: ConsoleUser, report_id):
    return _execution(request, user, report_id)


@require_POST
@console_view
def execution_requeue_view(request, user: ConsoleUser, report_id):
    try:
        execution_capture_requeue(principal=user.principal, report_id=report_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    except DomainError as exc:
        return _execution(request, user, report_id, status=exc.status, requeue_error=exc.detail)
    messages.success(request, "Capture re-queued.")
    return redirect("memory_console:execution", report_id=report_id)
