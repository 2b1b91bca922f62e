"""The failures page: every registered job kind's failed jobs in the operator's company,
each with a re-queue button (the kind's own re-queue, or the default one)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from persistence.console.access import ConsoleUser, console_view
from persistence.selectors.jobs import failed_jobs
from persistence.services.jobs import job_operator_requeue
from synthorg.errors import DomainError, NotFoundError
from synthorg.jobs.registry import job_kind


def _failures(request, user: ConsoleUser, *, status=200, **extra):
    context = {"section": "failures", "failures": failed_jobs(company=user.company)}
    context.update(extra)
    return render(request, "console/jobs/failures.html", context, status=status)


@console_view
def failures_view(request, user: ConsoleUser):
    return _failures(request, user)


@require_POST
@console_view
def failure_requeue_view(request, user: ConsoleUser, kind: str, job_id: str):
    try:
        job_type = job_kind(kind)
    except KeyError:
        raise Http404("No such job kind.") from None
    requeue = job_type.requeue or (
        lambda *, principal, job_id: job_operator_requeue(
            principal=principal, kind=job_type, job_id=job_id
        )
    )
    try:
        requeue(principal=user.principal, job_id=job_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    except DomainError as exc:
        return _failures(request, user, status=exc.status, requeue_error=exc.detail)
    messages.success(request, f"{job_type.title} re-queued: it runs again within a minute.")
    return redirect("console:failures")
