"""The query-adapter fine-tune lifecycle: plan → preflight → start → (q2) train → evaluate
→ promote or not → rollback / delete. The operator's guide is docs/operating/fine-tune.md.

* **Start** (:func:`fine_tune_start`) refuses what preflight finds (``fine_tune_disabled``,
  ``base_model_mismatch``, ``not_enough_pairs`` …) and creates a ``planned`` run holding the
  ``memory.fine_tune`` settings; its task is queued on commit (the default q2 cluster: CPU,
  no LLM).
* **Synthesize** (:func:`fine_tune_synthesize`, on the LLM cluster; the job kind
  :data:`FINE_TUNE_SYNTHESIS_JOB`): with an LLM configured and
  ``synthetic_queries_per_memory``/``max_synthetic_memories`` above 0, the run's first task
  hands over to it; under one of the company's LLM slots it asks the LLM for questions per
  memory once (:mod:`memory.finetune.synthetic`), saves them with the run and queues the
  training again. With every slot taken the run waits for its turn (``planned``, the
  kernel's deferral reason, not an attempt): the slot's holder serves it in its pass, or
  the kind's every-minute dispatch does — it never trains without its synthetic queries.
* **A durable job** (:mod:`synthorg.jobs`, the kind :data:`FINE_TUNE_JOB`): a task claims
  the ``planned`` run (``running``, one more attempt) under a lease of
  ``auto_resume_after_minutes``, renewed after every embedded batch, saved epoch and LLM
  call; every write of the worker is fenced by that lease, so a worker whose run was
  cancelled or reclaimed stops at its next renewal. Every transition is a
  :class:`~memory.finetune.models.FineTuneRunStatusChange` row (append-only).
* **Execute** (:func:`fine_tune_execute`, the task body) claims the run, mines
  the pairs (with the run's synthetic ones), embeds the (redacted) queries with the base
  embedder, trains, saving the training state after every epoch, and stops when the epochs
  are done or the run's total ``max_training_seconds`` is spent. A task that has trained
  ``task_budget`` seconds stops at the next saved epoch, gives the run back (``planned``, the
  attempt not counted) and queues its continuation. The
  adapter is evaluated on the held-out pairs (recall@10, nDCG@10 before and after) and, when
  ``evaluation_file`` is set, on the company's dev questions; it is **promoted** (written as
  a checkpoint and made active, in one transaction) only when the nDCG@10 gain is at least
  ``min_gain`` on both; otherwise the run ends ``not_promoted`` with the figures.
* **Resume** (an audited re-queue) continues a ``failed`` or ``cancelled`` run, or a
  ``running`` one whose lease has passed (its worker is gone), from the last saved epoch,
  with the settings it was planned with; its attempts start over.
* **Auto-resume** (the kernel's ``jobs-finetune.run`` schedule and company task, every
  minute): a ``running`` run whose lease has passed is reclaimed (``failed``, due now), then
  re-queued by :func:`fine_tune_auto_resume` and run again — until the kernel's
  :class:`~synthorg.jobs.policy.RetryPolicy` of ``max_auto_resumes + 1`` attempts gives up;
  then it fails with the reason. Audited. A ``planned`` run whose task never claimed it
  within a lease (a lost broker message) is run by the company task too.
* **Cancel**, **rollback** (to any checkpoint of the company or to the base model) and
  **delete** (a checkpoint that is not active) take the guardrail triple (the acting human,
  a literal ``confirm: true``, a non-blank reason) and are audited in their transaction.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import timedelta

import numpy as np
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from memory.core.llm import completion_provider_for
from memory.finetune import query_adapter as qa
from memory.finetune.config import EmbeddingFineTuneConfig
from memory.finetune.models import (
    RESUMABLE,
    AdapterCheckpoint,
    FineTuneRun,
    FineTuneRunStatusChange,
)
from memory.finetune.selectors import (
    checkpoint_file,
    dev_questions,
    evaluation_file_problem,
    mine_pairs,
    pair_counts,
)
from memory.finetune.synthetic import SyntheticQueries, synthetic_queries_generate
from persistence.access import CREATE, DELETE, UPDATE, require_write
from persistence.audit_actions import AuditAction
from persistence.models import Company
from persistence.principal import Principal
from persistence.selectors.config import company_config
from persistence.selectors.embedder import company_embedder
from persistence.services.audit import audit_record
from synthorg.embedding import Embedder
from synthorg.errors import ConflictError, NotFoundError, NotSupportedError, UnprocessableError
from synthorg.jobs.dispatch import job_llm_slot
from synthorg.jobs.history import history_writer
from synthorg.jobs.policy import RetryPolicy
from synthorg.jobs.registry import JobKind, llm_call_lease
from synthorg.jobs.services import (
    LeaseLost,
    job_claim,
    job_finish,
    job_renew,
    job_requeue,
)
from synthorg.llm import CompletionProvider, llm_configured
from synthorg.schedules import LLM_CLUSTER
from synthorg.tenancy import TenantPathError, tenant_path
from synthorg.tools import Confirmation

logger = logging.getLogger(__name__)

TASK = "memory.finetune.tasks.run_fine_tune"
SYNTHESIS_TASK = "memory.finetune.tasks.run_fine_tune_synthesis"
RESOURCE = "fine_tune"
LINEAR_ADAPTER = FineTuneRun.Method.LINEAR_ADAPTER.value
FULL_MODEL = "full_model"
#: The widest embedder an adapter is trained for here: a d×d matrix and its Adam moments
#: (3 · 4 · d² bytes: 12 MB at 1024) and O(d²) work per pair on 2 CPU cores.
MAX_ADAPTER_DIMS = 1024
#: Seconds one task trains before queueing its continuation (under the q2 timeout).
TASK_TIME_BUDGET_S = 240.0
EMBED_BATCH = 64
#: The lease a claim takes before the run's company lease (``auto_resume_after_minutes``)
#: replaces it, and of a ``running`` row from before leases (leased from ``updated_at``).
CLAIM_LEASE = timedelta(minutes=2)
RECLAIMED = (
    "reclaimed: the worker running this run showed no sign of life within its lease ({seconds} s)"
)

FULL_MODEL_UNSUPPORTED = (
    "A full fine-tune of the base model is an optional extra this installation does not "
    "include; use method linear_adapter (a query-side adapter, no GPU needed)."
)
DIMS_UNSUPPORTED = (
    "The company's embedder produces {dims}-dimensional vectors; query adapters are trained "
    f"for embedders up to {MAX_ADAPTER_DIMS} dimensions on this server."
)
DISABLED = "Fine-tuning is disabled for this company (memory.fine_tune.enabled is false)."
BASE_MISMATCH = (
    "memory.fine_tune.base_model is {configured!r} but the company's embedder is {actual!r}: "
    "an adapter maps one embedder's vectors; set base_model to the embedder id."
)
NOT_ENOUGH_PAIRS = "Found {found} training pairs; memory.fine_tune.min_pairs is {needed}."
CHECKPOINT_DIR_UNUSABLE = "memory.fine_tune.checkpoint_path cannot be used: {reason}"
IN_FLIGHT = "A fine-tune run is already planned or running for this company: {run}."
NOT_RESUMABLE = "Run {run} is {status}; only failed, cancelled or crashed runs resume."
STILL_RUNNING = "Run {run} is running on a worker (its lease holds); cancel it first."
NOT_CANCELLABLE = "Run {run} is {status}; only planned or running runs can be cancelled."
NO_SUCH_RUN = "No such fine-tune run."
NO_SUCH_CHECKPOINT = "No such adapter checkpoint."
RUN_NOT_FOUND = "fine_tune_run_not_found"
CHECKPOINT_NOT_FOUND = "checkpoint_not_found"
CHECKPOINT_ACTIVE = "Checkpoint {checkpoint} is active; roll back to another or to the base first."
CHECKPOINT_OTHER_EMBEDDER = (
    "Checkpoint {checkpoint} maps {embedder!r} vectors; the company's embedder is {actual!r}."
)
CANCELLED_BY_REQUEST = "cancelled"


@dataclass(frozen=True)
class FineTunePlan:
    method: str = LINEAR_ADAPTER


@dataclass
class Preflight:
    ok: bool
    embedder_id: str
    dims: int
    pairs: dict[str, int]
    problems: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _config(company: Company) -> EmbeddingFineTuneConfig:
    return company_config(company).memory.fine_tune


def _check_method(plan: FineTunePlan, dims: int) -> None:
    if plan.method == FULL_MODEL:
        raise NotSupportedError(FULL_MODEL_UNSUPPORTED)
    if plan.method != LINEAR_ADAPTER:
        raise UnprocessableError(f"Unknown method {plan.method!r}.", code="unknown_method")
    if dims > MAX_ADAPTER_DIMS:
        raise NotSupportedError(DIMS_UNSUPPORTED.format(dims=dims))


def checkpoint_directory(company: Company, config: EmbeddingFineTuneConfig):
    """The resolved, created checkpoint directory (raises ``UnprocessableError``)."""
    if config.checkpoint_path is None:
        raise UnprocessableError(
            CHECKPOINT_DIR_UNUSABLE.format(reason="not set"), code="checkpoint_path_unusable"
        )
    try:
        directory = tenant_path(company.pk, config.checkpoint_path)
        directory.mkdir(parents=True, exist_ok=True)
    except (TenantPathError, OSError) as exc:
        raise UnprocessableError(
            CHECKPOINT_DIR_UNUSABLE.format(reason=str(exc)), code="checkpoint_path_unusable"
        ) from None
    if not os.access(directory, os.W_OK):
        raise UnprocessableError(
            CHECKPOINT_DIR_UNUSABLE.format(reason="not writable"), code="checkpoint_path_unusable"
        )
    return directory


def fine_tune_preflight(*, company: Company, plan: FineTunePlan) -> Preflight:
    """What a start would refuse, without starting anything (501 for an unsupported method
    or embedder width). Creates the checkpoint directory when it can."""
    embedder = company_embedder(company)
    _check_method(plan, embedder.dims)
    config = _config(company)
    problems: list[dict] = []
    if not config.enabled:
        problems.append({"code": "fine_tune_disabled", "detail": DISABLED})
    if config.base_model is not None and config.base_model != embedder.embedder_id:
        problems.append(
            {
                "code": "base_model_mismatch",
                "detail": BASE_MISMATCH.format(
                    configured=config.base_model, actual=embedder.embedder_id
                ),
            }
        )
    try:
        checkpoint_directory(company, config)
    except UnprocessableError as exc:
        problems.append({"code": exc.code, "detail": exc.detail})
    evaluation = evaluation_file_problem(company, config, embedder.embedder_id)
    if evaluation is not None:
        problems.append(evaluation.as_dict())
    pairs = pair_counts(company, embedder.embedder_id)
    found = min(sum(pairs.values()), config.max_pairs)
    if found < config.min_pairs:
        problems.append(
            {
                "code": "not_enough_pairs",
                "detail": NOT_ENOUGH_PAIRS.format(found=found, needed=config.min_pairs),
            }
        )
    return Preflight(
        ok=not problems,
        embedder_id=embedder.embedder_id,
        dims=embedder.dims,
        pairs=pairs,
        problems=problems,
    )


def _params_of(config: EmbeddingFineTuneConfig) -> dict:
    return config.model_dump(
        include={
            "min_gain", "epochs", "max_training_seconds", "learning_rate", "temperature",
            "hard_negatives", "held_out_share", "min_pairs", "max_pairs", "seed",
            "synthetic_queries_per_memory", "max_synthetic_memories",
        }
    )  # fmt: skip


@transaction.atomic
def fine_tune_start(
    *, company: Company, plan: FineTunePlan, principal: Principal, via: str = "api"
) -> FineTuneRun:
    require_write(principal, RESOURCE, CREATE)
    preflight = fine_tune_preflight(company=company, plan=plan)
    if not preflight.ok:
        first = preflight.problems[0]
        raise UnprocessableError(
            first["detail"], code=first["code"], errors=preflight.problems,
            extra={"pairs": preflight.pairs},
        )  # fmt: skip
    Company.objects.select_for_update().get(pk=company.pk)  # serialise starts per company
    running = FineTuneRun.objects.filter(
        company=company, status__in=[FineTuneRun.Status.PLANNED, FineTuneRun.Status.RUNNING]
    ).first()
    if running is not None:
        raise ConflictError(IN_FLIGHT.format(run=running.pk), code="fine_tune_in_flight")
    config = _config(company)
    now = timezone.now()
    run = FineTuneRun.objects.create(
        company=company, method=plan.method, embedder_id=preflight.embedder_id,
        dims=preflight.dims, params=_params_of(config), epochs_total=config.epochs,
        figures={"pairs_available": preflight.pairs}, requested_by=principal.user,
        created_at=now, updated_at=now, next_attempt_at=_dispatched(now),
    )  # fmt: skip
    fine_tune_history_record(run, now=now, actor=_actor(principal))
    audit_record(
        company=company, action_type=AuditAction.MEMORY_FINE_TUNE_STARTED, principal=principal,
        target_type="fine_tune_run", target_id=run.pk,
        details={"method": plan.method, "embedder_id": run.embedder_id, "via": via},
    )  # fmt: skip
    run_id = run.pk
    transaction.on_commit(lambda: enqueue_fine_tune(run_id))
    return run


def enqueue_fine_tune(run_id) -> None:
    """Queue the run's task (``resume`` re-queues a run whose task was lost)."""
    try:
        from django_q.tasks import async_task

        async_task(TASK, str(run_id), task_name=f"fine-tune-{run_id}-{uuid.uuid4().hex[:8]}")
    except Exception:
        logger.exception("queueing fine-tune run %s failed", run_id)


def enqueue_fine_tune_synthesis(run_id) -> None:
    """Queue the run's synthetic-query generation on the LLM cluster (a hanging endpoint
    holds an LLM worker, never a training worker)."""
    try:
        from django_q.tasks import async_task

        async_task(
            SYNTHESIS_TASK, str(run_id), cluster=LLM_CLUSTER,
            task_name=f"fine-tune-synthesis-{run_id}-{uuid.uuid4().hex[:8]}",
        )  # fmt: skip
    except Exception:
        logger.exception("queueing fine-tune synthesis %s failed", run_id)


def _get_run(company: Company, run_id) -> FineTuneRun:
    try:
        run = FineTuneRun.objects.filter(company=company, pk=run_id).first()
    except ValidationError:  # not a run id at all (the failures page passes any text)
        run = None
    if run is None:
        raise NotFoundError(NO_SUCH_RUN, code=RUN_NOT_FOUND)
    return run


def _actor(principal: Principal) -> str:
    return f"user:{principal.user.pk}" if principal.user is not None else ""


def _dispatched(now):
    """When a ``planned`` run whose task was just queued is due again: if no worker has
    claimed it within a lease, its task is taken for lost and the kernel's company task runs it."""
    return now + CLAIM_LEASE


def _lease(company: Company) -> timedelta:
    """How long a worker may go without a sign of life before its run is reclaimed."""
    return timedelta(minutes=_config(company).auto_resume_after_minutes)


def _lease_end(run: FineTuneRun):
    return run.claimed_until or run.updated_at + CLAIM_LEASE


@transaction.atomic
def fine_tune_resume(
    *,
    company: Company,
    run_id,
    principal: Principal,
    via: str = "api",
    action: AuditAction = AuditAction.MEMORY_FINE_TUNE_RESUMED,
) -> FineTuneRun:
    """Queue a ``failed`` or ``cancelled`` run again, or a ``running`` one whose lease has
    passed (its worker died): ``planned``, due now, its attempts starting over, the history
    naming the admin, audited as ``action``; 409 while a worker's lease holds."""
    require_write(principal, RESOURCE, UPDATE)
    run = _get_run(company, run_id)
    run = FineTuneRun.objects.select_for_update().get(pk=run.pk)
    now = timezone.now()
    previous = run.status
    if run.status == FineTuneRun.Status.RUNNING:
        if _lease_end(run) >= now:
            raise ConflictError(STILL_RUNNING.format(run=run.pk), code="fine_tune_running")
    elif run.status not in RESUMABLE:
        raise ConflictError(
            NOT_RESUMABLE.format(run=run.pk, status=run.status), code="fine_tune_not_resumable"
        )
    other = (
        FineTuneRun.objects.filter(company=company, status__in=["planned", "running"])
        .exclude(pk=run.pk)
        .first()
    )
    if other is not None:
        raise ConflictError(IN_FLIGHT.format(run=other.pk), code="fine_tune_in_flight")
    # The worker of a running run is gone: its lease ends now (fenced like its own outcome).
    job_finish(
        FINE_TUNE_JOB, run, status=FineTuneRun.Status.PLANNED, reason="", now=now,
        completed=False, completed_at=None, attempts=0, next_attempt_at=_dispatched(now),
        history_reason=f"resumed by hand from {previous}", actor=_actor(principal),
    )  # fmt: skip
    audit_record(
        company=company, action_type=action, principal=principal,
        target_type="fine_tune_run", target_id=run.pk,
        details={"from_status": previous, "epochs_done": run.epochs_done, "via": via},
    )  # fmt: skip
    run_pk = run.pk
    transaction.on_commit(lambda: enqueue_fine_tune(run_pk))
    return run


AUTO_RESUMED = "auto-resumed: its worker was lost"
AUTO_RESUME_EXHAUSTED = (
    "The worker running this run was lost {attempts} times (no sign of life for {minutes} "
    "minutes); memory.fine_tune.max_auto_resumes is {max}. Resume it by hand."
)


@transaction.atomic
def fine_tune_auto_resume(run_id, now) -> bool:
    """:data:`FINE_TUNE_JOB`'s ``resume``: the kernel's company task found the run due and
    ``failed`` (reclaimed: its worker died). Re-queue it (``planned``, due now) and audit it,
    unless the retry policy of its company (``max_auto_resumes + 1`` attempts) gives up or
    another run of the company is in flight — then it stays ``failed`` with the reason, not
    due (resumable by hand), audited. ``True`` when it was re-queued."""
    run = FineTuneRun.objects.select_related("company").get(pk=run_id)
    Company.objects.select_for_update().get(pk=run.company_id)  # as a start does
    run = FineTuneRun.objects.select_for_update().select_related("company").get(pk=run_id)
    if run.status != FineTuneRun.Status.FAILED or run.next_attempt_at is None:
        return False  # resumed by hand meanwhile
    config = _config(run.company)
    policy = RetryPolicy(max_attempts=config.max_auto_resumes + 1)
    details = {
        "epochs_done": run.epochs_done, "attempts": run.attempts,
        "max_auto_resumes": config.max_auto_resumes,
    }  # fmt: skip
    other = (
        FineTuneRun.objects.filter(company=run.company, status__in=["planned", "running"])
        .exclude(pk=run.pk)
        .first()
    )
    if policy.gives_up(run.attempts) or other is not None:
        reason = (
            IN_FLIGHT.format(run=other.pk)
            if other is not None
            else AUTO_RESUME_EXHAUSTED.format(
                attempts=run.attempts, minutes=config.auto_resume_after_minutes,
                max=config.max_auto_resumes,
            )
        )  # fmt: skip
        job_finish(FINE_TUNE_JOB, run, status=FineTuneRun.Status.FAILED, now=now, reason=reason)
        audit_record(
            company=run.company, action_type=AuditAction.MEMORY_FINE_TUNE_AUTO_RESUME_EXHAUSTED,
            target_type="fine_tune_run", target_id=run.pk, details={**details, "reason": reason},
        )  # fmt: skip
        return False
    job_requeue(FINE_TUNE_JOB, run.pk, now=now, reason=AUTO_RESUMED, due=True)
    audit_record(
        company=run.company, action_type=AuditAction.MEMORY_FINE_TUNE_AUTO_RESUMED,
        target_type="fine_tune_run", target_id=run.pk, details=details,
    )  # fmt: skip
    return True


@transaction.atomic
def fine_tune_cancel(
    *, company: Company, run_id, principal: Principal, confirmation: Confirmation
) -> FineTuneRun:
    """Stop a planned or running run; the worker notices at its next lease renewal (the
    epoch in progress is not saved). Resumable later from the last saved epoch."""
    require_write(principal, RESOURCE, UPDATE)
    run = _get_run(company, run_id)
    run = FineTuneRun.objects.select_for_update().get(pk=run.pk)
    if run.status not in (FineTuneRun.Status.PLANNED, FineTuneRun.Status.RUNNING):
        raise ConflictError(
            NOT_CANCELLABLE.format(run=run.pk, status=run.status),
            code="fine_tune_not_cancellable",
        )
    previous = run.status
    job_finish(
        FINE_TUNE_JOB, run, status=FineTuneRun.Status.CANCELLED,
        history_reason=confirmation.reason, actor=_actor(principal),
    )  # fmt: skip
    audit_record(
        company=company, action_type=AuditAction.MEMORY_FINE_TUNE_CANCELLED, principal=principal,
        target_type="fine_tune_run", target_id=run.pk,
        details={"reason": confirmation.reason, "via": confirmation.via, "from_status": previous},
    )  # fmt: skip
    return run


@transaction.atomic
def adapter_rollback(
    *, company: Company, checkpoint_id, principal: Principal, confirmation: Confirmation
) -> AdapterCheckpoint | None:
    """Make ``checkpoint_id`` the active adapter, or none (``None``: the base model), in one
    transaction. Returns the now active checkpoint."""
    require_write(principal, RESOURCE, UPDATE)
    Company.objects.select_for_update().get(pk=company.pk)
    target = None
    if checkpoint_id is not None:
        target = AdapterCheckpoint.objects.filter(company=company, pk=checkpoint_id).first()
        if target is None:
            raise NotFoundError(NO_SUCH_CHECKPOINT, code=CHECKPOINT_NOT_FOUND)
        embedder = company_embedder(company)
        if (target.embedder_id, target.dims) != (embedder.embedder_id, embedder.dims):
            raise ConflictError(
                CHECKPOINT_OTHER_EMBEDDER.format(
                    checkpoint=target.pk, embedder=target.embedder_id, actual=embedder.embedder_id
                ),
                code="checkpoint_other_embedder",
            )
    previous = AdapterCheckpoint.objects.filter(company=company, is_active=True).first()
    _activate(company, target)
    audit_record(
        company=company, action_type=AuditAction.MEMORY_FINE_TUNE_ROLLED_BACK, principal=principal,
        target_type="adapter_checkpoint", target_id=target.pk if target else "base",
        details={
            "reason": confirmation.reason, "via": confirmation.via,
            "previous": str(previous.pk) if previous else None,
        },
    )  # fmt: skip
    return target


def _activate(company: Company, target: AdapterCheckpoint | None) -> None:
    now = timezone.now()
    AdapterCheckpoint.objects.filter(company=company, is_active=True).update(is_active=False)
    if target is not None:
        AdapterCheckpoint.objects.filter(pk=target.pk).update(is_active=True, activated_at=now)
        target.is_active, target.activated_at = True, now


@transaction.atomic
def adapter_checkpoint_delete(
    *, company: Company, checkpoint_id, principal: Principal, confirmation: Confirmation
) -> None:
    """Delete an inactive checkpoint and, after commit, its file."""
    require_write(principal, RESOURCE, DELETE)
    checkpoint = (
        AdapterCheckpoint.objects.select_for_update()
        .filter(company=company, pk=checkpoint_id)
        .first()
    )
    if checkpoint is None:
        raise NotFoundError(NO_SUCH_CHECKPOINT, code=CHECKPOINT_NOT_FOUND)
    if checkpoint.is_active:
        raise ConflictError(
            CHECKPOINT_ACTIVE.format(checkpoint=checkpoint.pk), code="checkpoint_active"
        )
    try:
        path = checkpoint_file(company.pk, checkpoint)
    except TenantPathError:
        path = None
    checkpoint.delete()
    audit_record(
        company=company, principal=principal,
        action_type=AuditAction.MEMORY_FINE_TUNE_CHECKPOINT_DELETED,
        target_type="adapter_checkpoint", target_id=checkpoint_id,
        details={"reason": confirmation.reason, "via": confirmation.via},
    )  # fmt: skip
    if path is not None:
        transaction.on_commit(lambda: path.unlink(missing_ok=True))


# --- the task body ----------------------------------------------------------------------------


class _Stopped(Exception):
    """The run left ``running`` (cancelled) while this worker trained it."""


class _Continue(Exception):
    """The task's budget is spent after a saved epoch: a fresh task continues."""


class _Synthesize(Exception):
    """The run's synthetic queries are still to be generated (on the LLM cluster)."""


CONTINUE = "continue"
SYNTHESIZE = "synthesize"
#: What the synthesis task answers when the company's LLM slots were busy: the run waits
#: for its turn (``planned``, deferred).
WAITING = "waiting"


def _embed(embedder: Embedder, texts: list[str], beat: Callable[[], None]) -> np.ndarray:
    chunks = []
    for i in range(0, len(texts), EMBED_BATCH):
        chunks.append(embedder.embed(texts[i : i + EMBED_BATCH]))
        beat()
    return qa.normalize_rows(np.vstack(chunks).astype(np.float32))


#: Appends the run's current status (its attempts and reason) to its history.
fine_tune_history_record = history_writer(FineTuneRunStatusChange, "run")


def _renew(run: FineTuneRun, lease: timedelta, **fields) -> None:
    """The worker is alive: extend its lease (saving ``fields``), or stop (cancelled, or
    the lease was taken over)."""
    if not job_renew(FINE_TUNE_JOB, run, lease=lease, **fields):
        raise _Stopped


def _release(run: FineTuneRun, reason: str) -> None:
    """Give the claimed run back (``planned``) for the task queued next; a continuation is
    not an attempt."""
    now = timezone.now()
    job_finish(
        FINE_TUNE_JOB, run, status=FineTuneRun.Status.PLANNED, now=now, completed=False,
        attempts=max(run.attempts - 1, 0), next_attempt_at=_dispatched(now),
        history_reason=reason,
    )  # fmt: skip


def _claim(run_id, kind: JobKind | None = None) -> FineTuneRun | str:
    """Claim the run for this worker as ``kind`` (default :data:`FINE_TUNE_JOB`; outside
    any transaction), or the status of a run that is not claimable (another worker has it,
    or it ended)."""
    if connection.in_atomic_block:
        raise RuntimeError("a fine-tune run executes outside transactions")
    run = job_claim(kind or FINE_TUNE_JOB, run_id)
    if run is None:
        current = FineTuneRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
        return current or "missing"
    return run


def fine_tune_execute(
    run_id,
    *,
    task_budget: float = TASK_TIME_BUDGET_S,
    embedder: Embedder | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_epoch: Callable[[FineTuneRun], None] | None = None,
) -> str:
    """Claim the run (outside any transaction) and work on it until it ends or
    ``task_budget`` is spent; returns its status, or ``"continue"`` when a continuation task
    was queued (the budget is checked after each saved epoch), or ``"synthesize"`` when the
    synthetic queries were queued for generation first (that task queues the training
    again), or the status of a run this task could not claim. An error fails the run with
    the error recorded (resumable)."""
    run = _claim(run_id)
    if isinstance(run, str):
        return run
    return fine_tune_job_run(run, task_budget=task_budget, embedder=embedder, clock=clock,
                             on_epoch=on_epoch)  # fmt: skip


def fine_tune_job_run(
    run: FineTuneRun,
    batch=None,
    *,
    task_budget: float = TASK_TIME_BUDGET_S,
    embedder: Embedder | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_epoch: Callable[[FineTuneRun], None] | None = None,
) -> str:
    """Work on ``run``, claimed by this worker (:data:`FINE_TUNE_JOB`'s ``run``): what
    :func:`fine_tune_execute` does after its claim."""
    run_id = run.pk
    lease = _lease(run.company)
    try:
        _renew(run, lease, started_at=run.started_at or timezone.now())
        return _train_and_finish(run, task_budget, embedder, clock, on_epoch, lease)
    except _Continue:
        _release(run, "continue: the task's time budget is spent")
        enqueue_fine_tune(run_id)
        return CONTINUE
    except _Synthesize:
        _release(run, "synthesize: the synthetic queries come first, on the LLM cluster")
        enqueue_fine_tune_synthesis(run_id)
        return SYNTHESIZE
    except (_Stopped, LeaseLost):
        return FineTuneRun.objects.get(pk=run_id).status
    except Exception as exc:
        return _fail(run, exc)


def _fail(run: FineTuneRun, exc: Exception) -> str:
    logger.exception("fine-tune run %s failed", run.pk)
    with contextlib.suppress(LeaseLost):  # cancelled or reclaimed meanwhile: that stands
        job_finish(
            FINE_TUNE_JOB, run, status=FineTuneRun.Status.FAILED,
            reason=f"{type(exc).__name__}: {exc}"[:2000],
        )  # fmt: skip
    return FineTuneRun.objects.get(pk=run.pk).status


#: Runs whose synthetic queries are asked for and not generated yet (:func:`_synthetic_pending`
#: in SQL): :data:`FINE_TUNE_SYNTHESIS_JOB`'s, not the training's.
SYNTHESIS_PENDING = (
    ~Q(figures__has_key="synthetic")
    & Q(params__synthetic_queries_per_memory__gt=0)
    & Q(params__max_synthetic_memories__gt=0)
)


def _synthetic_pending(run: FineTuneRun) -> bool:
    """The run asks for synthetic queries and they have not been generated yet (a run
    planned before the knobs existed has none in its ``params``: none asked)."""
    params = run.params
    return (
        "synthetic" not in run.figures
        and params.get("synthetic_queries_per_memory", 0) > 0
        and params.get("max_synthetic_memories", 0) > 0
    )


def _save_synthetic(run: FineTuneRun, found: SyntheticQueries, lease: timedelta) -> None:
    _renew(
        run, lease, figures={**run.figures, "synthetic": found.figures()},
        synthetic_pairs=[[query, str(memory_id)] for query, memory_id in found.pairs],
    )  # fmt: skip


def fine_tune_synthesize(
    run_id,
    *,
    provider: CompletionProvider | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """The LLM-cluster task body: claim the run (:data:`FINE_TUNE_SYNTHESIS_JOB`) and, under
    one of its company's LLM slots, generate its synthetic queries
    (:func:`fine_tune_synthesis_run`). With every slot taken the run is deferred — back to
    ``planned``, the attempt not counted, due again in a few seconds — and waits for its
    turn (:data:`WAITING`). Returns ``"continue"`` (training queued), :data:`WAITING`, or the
    status of a run this task could not claim or that stopped."""
    run = _claim(run_id, FINE_TUNE_SYNTHESIS_JOB)
    if isinstance(run, str):
        return run
    try:
        with job_llm_slot(FINE_TUNE_SYNTHESIS_JOB, run) as slot:
            if not slot:
                return WAITING
            return fine_tune_synthesis_run(run, provider=provider, clock=clock)
    except LeaseLost:  # cancelled before its deferral: that stands
        return FineTuneRun.objects.get(pk=run_id).status


def fine_tune_synthesis_run(
    run: FineTuneRun,
    batch=None,
    *,
    provider: CompletionProvider | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """:data:`FINE_TUNE_SYNTHESIS_JOB`'s ``run`` (the caller holds one of the company's LLM
    slots): generate the claimed run's synthetic queries once (LLM failures degrade,
    counted), save them with the run, give it back and queue its training again. The lease
    is renewed after every LLM call (at least an LLM call's lease)."""
    lease = max(_lease(run.company), llm_call_lease())
    try:
        _renew(run, lease)
        if _synthetic_pending(run):
            found = synthetic_queries_generate(
                company=run.company, embedder_id=run.embedder_id,
                per_memory=run.params["synthetic_queries_per_memory"],
                max_memories=run.params["max_synthetic_memories"], seed=run.params["seed"],
                provider=provider, on_batch=lambda: _renew(run, lease), clock=clock,
            )  # fmt: skip
            _save_synthetic(run, found, lease)
        _release(run, "trained next: the synthetic queries are saved")
    except (_Stopped, LeaseLost):
        return FineTuneRun.objects.get(pk=run.pk).status
    except Exception as exc:
        return _fail(run, exc)
    enqueue_fine_tune(run.pk)
    return CONTINUE


def _train_and_finish(run: FineTuneRun, task_budget, embedder, clock, on_epoch, lease) -> str:
    company = run.company
    params = run.params
    embedder = embedder or company_embedder(company)
    if (embedder.embedder_id, embedder.dims) != (run.embedder_id, run.dims):
        raise RuntimeError(
            f"the company's embedder is now {embedder.embedder_id!r} ({embedder.dims}), "
            f"the run was planned for {run.embedder_id!r} ({run.dims})"
        )
    if _synthetic_pending(run):
        provider = completion_provider_for(company=company)
        if provider is not None:
            provider.close()
            raise _Synthesize
        _save_synthetic(run, SyntheticQueries(method="none"), lease)  # no LLM: nothing to ask
    config = _config(company)
    evaluation = evaluation_file_problem(company, config, run.embedder_id)
    if evaluation is not None:  # changed since preflight: training could not be judged
        raise RuntimeError(f"{evaluation.code}: {evaluation.detail}")
    synthetic = [(query, uuid.UUID(memory_id)) for query, memory_id in run.synthetic_pairs]
    pairs = mine_pairs(
        company, run.embedder_id, config, max_pairs=params["max_pairs"], synthetic=synthetic
    )
    if len(pairs.queries) < params["min_pairs"]:
        raise RuntimeError(
            NOT_ENOUGH_PAIRS.format(found=len(pairs.queries), needed=params["min_pairs"])
        )
    _renew(run, lease)
    queries = _embed(embedder, pairs.queries, lambda: _renew(run, lease))
    train_rows, held = qa.split_held_out(len(queries), params["held_out_share"], params["seed"])
    negatives = qa.mine_hard_negatives(
        queries, pairs.positives, pairs.docs, pairs.doc_groups, pairs.query_groups,
        params["hard_negatives"],
    )  # fmt: skip
    spent = float(run.figures.get("training_seconds", 0.0))
    remaining = params["max_training_seconds"] - spent
    state = qa.TrainingState.from_bytes(bytes(run.state)) if run.state else None
    stopped_by = run.figures.get("stopped_by", "")
    outcome_seconds = 0.0
    if remaining > 0 and (state is None or state.epochs_done < params["epochs"]):
        started = clock()

        def save(epoch_state: qa.TrainingState) -> None:
            seconds = spent + (clock() - started)
            _renew(
                run, lease, state=epoch_state.to_bytes(), epochs_done=epoch_state.epochs_done,
                figures={**run.figures, "training_seconds": round(seconds, 3),
                         "losses": [round(x, 5) for x in epoch_state.losses]},
            )  # fmt: skip
            if on_epoch is not None:
                on_epoch(run)
            # The task's budget is checked at epoch boundaries, after the state is saved: a
            # task always finishes at least one epoch, so a continuation always progresses.
            if clock() - started >= task_budget and epoch_state.epochs_done < params["epochs"]:
                raise _Continue

        outcome = qa.train(
            queries=queries[train_rows], positives=pairs.positives[train_rows],
            negatives=negatives[train_rows], docs=pairs.docs,
            params=qa.TrainingParams(
                epochs=params["epochs"], learning_rate=params["learning_rate"],
                temperature=params["temperature"], seed=params["seed"], max_seconds=remaining,
            ),
            state=state, on_epoch=save, clock=clock,
        )  # fmt: skip
        state = outcome.state
        outcome_seconds = outcome.seconds
        stopped_by = outcome.stopped_by
    elif remaining <= 0:
        stopped_by = "time"
    if state is None:
        state = qa.TrainingState.initial(run.dims)
    return _evaluate_and_finish(
        run, pairs, queries, held, state, stopped_by, spent + outcome_seconds, embedder, lease
    )


def _dev_figures(run, pairs, state, embedder, beat) -> dict | None:
    """Before/after on the company's own dev questions (``evaluation_file``), if given; each
    ranked among the memories of its first relevant memory's agent."""
    dev = dev_questions(run.company, _config(run.company), pairs.doc_ids)
    if dev is None:
        return None
    if not dev.queries:
        # A configured dev set that yields nothing cannot show a gain: refuse, with the reason.
        return {"questions": 0, "skipped": dev.skipped, "ndcg_gain": None}
    queries = _embed(embedder, dev.queries, beat)
    groups = np.array([pairs.doc_groups[r[0]] for r in dev.relevant], dtype=np.int64)
    kwargs = dict(
        queries=queries, relevant=dev.relevant, docs=pairs.docs, doc_groups=pairs.doc_groups,
        query_groups=groups, k=10,
    )  # fmt: skip
    before = qa.evaluate_relevant(**kwargs)
    after = qa.evaluate_relevant(**kwargs, matrix=state.matrix)
    return {
        "questions": len(dev.queries),
        "skipped": dev.skipped,
        "before": before.as_dict(),
        "after": after.as_dict(),
        "ndcg_gain": round(after.ndcg_at_k - before.ndcg_at_k, 4),
    }


def _evaluate_and_finish(
    run, pairs, queries, held, state, stopped_by, seconds, embedder, lease
) -> str:
    params = run.params
    kwargs = dict(
        queries=queries[held], positives=pairs.positives[held], docs=pairs.docs,
        doc_groups=pairs.doc_groups, query_groups=pairs.query_groups[held], k=10,
    )  # fmt: skip
    before = qa.evaluate(**kwargs)
    after = qa.evaluate(**kwargs, matrix=state.matrix)
    gain = after.ndcg_at_k - before.ndcg_at_k
    promote = gain >= params["min_gain"]
    dev = _dev_figures(run, pairs, state, embedder, lambda: _renew(run, lease))
    if dev is not None:
        # A gate of 0 dev questions shows nothing: it never passes.
        gain_on_dev = dev["ndcg_gain"]
        promote = (
            promote
            and dev["questions"] > 0
            and gain_on_dev is not None
            and gain_on_dev >= params["min_gain"]
        )
    figures = {
        **run.figures,
        "pairs": pairs.counts,
        "skipped": pairs.skipped,
        "redactions": pairs.redactions,
        "train_pairs": int(len(queries) - len(held)),
        "held_out_pairs": len(held),
        "documents": len(pairs.doc_ids),
        "before": before.as_dict(),
        "after": after.as_dict(),
        "ndcg_gain": round(gain, 4),
        "min_gain": params["min_gain"],
        "epochs_done": state.epochs_done,
        "stopped_by": stopped_by,
        "training_seconds": round(seconds, 3),
        "losses": [round(x, 5) for x in state.losses],
        **({"dev": dev} if dev is not None else {}),
    }
    data = qa.matrix_to_bytes(state.matrix)
    path = None
    if promote:
        config = _config(run.company)
        directory = checkpoint_directory(run.company, config)
        checkpoint_id = uuid.uuid4()
        path = directory / f"{checkpoint_id}.npy"
        partial = path.with_suffix(".partial")
        partial.write_bytes(data)
        os.replace(partial, path)
    try:
        with transaction.atomic():
            # The outcome is fenced by this worker's lease (LeaseLost: cancelled or reclaimed
            # meanwhile; the checkpoint row is rolled back with it).
            now = timezone.now()
            status = FineTuneRun.Status.PROMOTED if promote else FineTuneRun.Status.NOT_PROMOTED
            if promote:
                checkpoint = AdapterCheckpoint.objects.create(
                    id=checkpoint_id, company=run.company, run_id=run.pk,
                    embedder_id=run.embedder_id, dims=run.dims,
                    directory=config.checkpoint_path, file_name=path.name,
                    sha256=hashlib.sha256(data).hexdigest(), figures=figures, created_at=now,
                )  # fmt: skip
                Company.objects.select_for_update().get(pk=run.company_id)
                _activate(run.company, checkpoint)
                figures["checkpoint"] = str(checkpoint.pk)
            job_finish(
                FINE_TUNE_JOB, run, status=status, now=now, figures=figures,
                epochs_done=state.epochs_done,
            )  # fmt: skip
            audit_record(
                company=run.company, action_type=AuditAction.fine_tune(status),
                target_type="fine_tune_run", target_id=run.pk,
                details={"ndcg_gain": figures["ndcg_gain"], "min_gain": params["min_gain"],
                         "checkpoint": figures.get("checkpoint")},
            )  # fmt: skip
    except BaseException:
        if path is not None:
            path.unlink(missing_ok=True)
        raise
    return status


def _operator_requeue(*, principal: Principal, job_id) -> FineTuneRun:
    """The failures page's re-queue: the resume path (an admin's; the company's other run in
    flight refuses it), audited as ``fine_tune_run.requeued``."""
    return fine_tune_resume(
        company=principal.company, run_id=job_id, principal=principal, via="failures",
        action=AuditAction.FINE_TUNE_RUN_REQUEUED,
    )  # fmt: skip


def _training_due(cutoff):
    """The runs due for training (or its auto-resume): with an LLM configured, not those
    waiting for their synthetic queries (without one, the training records that none were
    asked)."""
    due = FineTuneRun.objects.filter(next_attempt_at__lte=cutoff)
    if not llm_configured():
        return due
    return due.exclude(pk__in=FineTuneRun.objects.filter(SYNTHESIS_PENDING).values("pk"))


def _synthesis_due(cutoff):
    """The runs due for their synthetic queries (deferred for busy slots, a lost task, or
    reclaimed from a dead worker); none without an LLM."""
    if not llm_configured():
        return FineTuneRun.objects.none()
    return FineTuneRun.objects.filter(SYNTHESIS_PENDING, next_attempt_at__lte=cutoff)


FINE_TUNE_JOB = JobKind(
    name="finetune.run",
    model=FineTuneRun,
    history=fine_tune_history_record,
    run=fine_tune_job_run,
    due=_training_due,
    resume=fine_tune_auto_resume,  # the company's own policy, audited
    llm_slots=False,  # CPU work: the default cluster; the synthesis is its own kind, below
    queued=FineTuneRun.Status.PLANNED,
    running=FineTuneRun.Status.RUNNING,
    lease=lambda: CLAIM_LEASE,
    keep_alive=False,  # the run renews its own lease (the company's) after every epoch
    select_related=("company",),
    reclaimed_reason=RECLAIMED,
    reclaimed_status=FineTuneRun.Status.FAILED,
    label="Fine-tune run",
    failed_statuses=(FineTuneRun.Status.FAILED,),
    describe=lambda run: f"{run.get_method_display()} on {run.embedder_id}",
    detail_url=lambda run: reverse("finetune_console:fine-tune") + f"#run-{run.pk}",
    target_type="fine_tune_run",
    requeue=_operator_requeue,
)

#: A run's synthetic-query generation: LLM work, on the LLM cluster under one of the
#: company's slots, in its turn. The same row, statuses, lease and reclaim as the training
#: and the company's auto-resume policy: a run reclaimed from either phase resumes in the
#: phase it left.
FINE_TUNE_SYNTHESIS_JOB = replace(
    FINE_TUNE_JOB,
    name="finetune.synthesis",
    run=fine_tune_synthesis_run,
    due=_synthesis_due,
    llm_slots=True,
    slot_per_run=True,  # the kernel holds a slot around the generation, or defers it
    batch_size=1,  # one run in flight per company
    failed_statuses=(),  # a failed run is listed (and re-queued) once, as the training's
)
