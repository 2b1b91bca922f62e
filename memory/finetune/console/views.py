"""Console fine-tune page: the company's runs with their figures and gate verdict, its adapter
checkpoints with the active one; admins start a run (the plan), check it first (preflight),
resume, cancel, roll back and delete — through the services ``/api/v1/memory/fine-tune/…``
calls. Every member reads; the writes are the admins' (the service checks the role; the page
says so first). Cancel, rollback and delete take the guardrail (a ticked confirmation and a
reason). Another company's run or checkpoint is a 404. Guide: docs/operating/fine-tune.md.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from memory.finetune import selectors as selectors
from memory.finetune import services as services
from persistence.console.access import ConsoleUser, console_view
from persistence.selectors.config import company_config
from synthorg.errors import DomainError, NotFoundError
from synthorg.tools import require_confirmation

RUNS_SHOWN = 20
CHECKPOINTS_SHOWN = 50
ROLE_CANNOT_CHANGE = (
    "Your role can read the fine-tune runs; the company's admins start, cancel and roll back."
)
REASON_MAX_CHARS = 2000


class PlanForm(forms.Form):
    method = forms.ChoiceField(
        choices=[
            (services.LINEAR_ADAPTER, "Query-side linear adapter (CPU)"),
            (services.FULL_MODEL, "Full model fine-tune (optional extra)"),
        ],
        initial=services.LINEAR_ADAPTER,
    )


class GuardForm(forms.Form):
    confirm = forms.BooleanField(required=False)
    reason = forms.CharField(required=False, max_length=REASON_MAX_CHARS)


class RollbackForm(GuardForm):
    #: a checkpoint id, or "base" for the base model alone
    checkpoint = forms.CharField(max_length=36)

    def clean_checkpoint(self):
        value = self.cleaned_data["checkpoint"]
        if value == "base":
            return None
        try:
            return forms.UUIDField().clean(value)
        except forms.ValidationError:
            raise forms.ValidationError("Pick a checkpoint or the base model.") from None


def _gate(figures: dict) -> dict | None:
    """The gate's figures as template-friendly names (``None`` before evaluation)."""
    if "ndcg_gain" not in figures:
        return None
    before, after = figures.get("before", {}), figures.get("after", {})
    dev = figures.get("dev")
    return {
        "recall_before": before.get("recall@10"),
        "recall_after": after.get("recall@10"),
        "ndcg_before": before.get("ndcg@10"),
        "ndcg_after": after.get("ndcg@10"),
        "gain": figures["ndcg_gain"],
        "min_gain": figures.get("min_gain"),
        "dev_questions": dev.get("questions") if dev else None,
        "dev_gain": dev.get("ndcg_gain") if dev else None,
    }


def _page(request, user: ConsoleUser, *, status=200, **extra):
    runs = list(selectors.fine_tune_runs(user.company).select_related("checkpoint")[:RUNS_SHOWN])
    for run in runs:
        run.gate = _gate(run.figures or {})
        run.checkpoint_row = (
            getattr(run, "checkpoint", None) if hasattr(run, "checkpoint") else None
        )
    checkpoints = list(selectors.adapter_checkpoints(user.company)[:CHECKPOINTS_SHOWN])
    for checkpoint in checkpoints:
        checkpoint.gate = _gate(checkpoint.figures or {})
    context = {
        "section": "fine_tune",
        "runs": runs,
        "checkpoints": checkpoints,
        "active": selectors.active_embedder(user.company),
        "config": company_config(user.company).memory.fine_tune,
        "plan_form": PlanForm(),
    }
    context.update(extra)
    return render(request, "finetune/fine_tune.html", context, status=status)


@console_view
def fine_tune_view(request, user: ConsoleUser):
    return _page(request, user)


def _refused(request, user: ConsoleUser, exc: DomainError, **extra):
    if isinstance(exc, NotFoundError):
        raise Http404(exc.detail)
    return _page(request, user, status=exc.status, action_error=exc.detail, **extra)


def _admin_only(request, user: ConsoleUser):
    if not user.can_administer:
        return _page(request, user, status=403, action_error=ROLE_CANNOT_CHANGE)
    return None


def _plan(request) -> services.FineTunePlan:
    form = PlanForm(request.POST)
    if not form.is_valid():
        raise _FormError("; ".join(e for errors in form.errors.values() for e in errors))
    return services.FineTunePlan(method=form.cleaned_data["method"])


class _FormError(Exception):
    pass


def _guard(form: GuardForm):
    if not form.is_valid():
        raise _FormError("; ".join(e for errors in form.errors.values() for e in errors))
    return require_confirmation(
        confirm=form.cleaned_data["confirm"], reason=form.cleaned_data["reason"], via="console"
    )


def _act(request, user: ConsoleUser, action):
    """Run ``action`` (it returns the success message) as an admin; a refusal re-renders the
    page with the reason and its status."""
    refused = _admin_only(request, user)
    if refused is not None:
        return refused
    try:
        success = action()
    except _FormError as exc:
        return _page(request, user, status=400, action_error=str(exc))
    except DomainError as exc:
        return _refused(request, user, exc)
    messages.success(request, success)
    return redirect("finetune_console:fine-tune")


@require_POST
@console_view
def fine_tune_preflight_view(request, user: ConsoleUser):
    refused = _admin_only(request, user)
    if refused is not None:
        return refused
    try:
        preflight = services.fine_tune_preflight(company=user.company, plan=_plan(request))
    except _FormError as exc:
        return _page(request, user, status=400, action_error=str(exc))
    except DomainError as exc:
        return _refused(request, user, exc)
    return _page(request, user, preflight=preflight)


@require_POST
@console_view
def fine_tune_start_view(request, user: ConsoleUser):
    def start():
        run = services.fine_tune_start(
            company=user.company, plan=_plan(request), principal=user.principal, via="console"
        )
        return f"Fine-tune run {run.pk} started: its training is queued."

    return _act(request, user, start)


@require_POST
@console_view
def fine_tune_resume_view(request, user: ConsoleUser, run_id):
    def resume():
        services.fine_tune_resume(
            company=user.company, run_id=run_id, principal=user.principal, via="console"
        )
        return f"Run {run_id} resumed from its last saved epoch."

    return _act(request, user, resume)


@require_POST
@console_view
def fine_tune_cancel_view(request, user: ConsoleUser, run_id):
    def cancel():
        services.fine_tune_cancel(
            company=user.company, run_id=run_id, principal=user.principal,
            confirmation=_guard(GuardForm(request.POST)),
        )  # fmt: skip
        return f"Run {run_id} cancelled; a worker training it stops at its next epoch."

    return _act(request, user, cancel)


@require_POST
@console_view
def fine_tune_rollback_view(request, user: ConsoleUser):
    def rollback():
        form = RollbackForm(request.POST)
        confirmation = _guard(form)
        target = services.adapter_rollback(
            company=user.company, checkpoint_id=form.cleaned_data["checkpoint"],
            principal=user.principal, confirmation=confirmation,
        )  # fmt: skip
        if target is None:
            return "Rolled back to the base model: searches use no adapter."
        return f"Rolled back: searches use adapter {target.pk}."

    return _act(request, user, rollback)


@require_POST
@console_view
def fine_tune_checkpoint_delete_view(request, user: ConsoleUser, checkpoint_id):
    def delete():
        services.adapter_checkpoint_delete(
            company=user.company, checkpoint_id=checkpoint_id, principal=user.principal,
            confirmation=_guard(GuardForm(request.POST)),
        )  # fmt: skip
        return f"Checkpoint {checkpoint_id} and its file deleted."

    return _act(request, user, delete)
