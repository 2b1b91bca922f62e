"""Starting and running re-embedding jobs.

When a company's effective embedder changes (``memory.embedder`` saved through
:func:`persistence.services.companies.company_config_set`: API, admin, ``load_company_config``),
:func:`reembed_job_start` records a :class:`ReembedJob` (one running per company, a DB
constraint) and queues :func:`memory.core.tasks.run_reembed_job`. The job:

1. builds the new embedder's HNSW index concurrently (``memory.core.vector_indexes``; writes go
   on meanwhile);
2. re-embeds the company's memories whose vector is not the new embedder's, in id order,
   ``batch_size`` at a time: the embedder is called outside any transaction, then each
   batch's vectors and the job's cursor and counts are committed together, so an
   interrupted job (worker killed, embedder down, time budget spent) resumes after the last
   committed row and never redoes one;
3. does the same for the company's live org-fact versions;
4. sweeps once more for rows that still have another embedder's vector, then completes.

Meanwhile every row keeps its old vector until the batch that replaces it commits; search
compares only vectors of the query's (new) embedder, the sparse leg finds the rest, and
search reports ``degraded: ["reembedding"]`` with the share done
(:func:`memory.core.selectors.reembed.reembedding_sql`). A row stored or changed during the job
is embedded by the new embedder on its own write path; the batch update skips a row whose
text changed since it was read. Memories still ``pending`` (no vector: the embedder failed
when they were stored) are the embedding backfill's, not the job's.

A durable job (:mod:`synthorg.jobs`, the kind :data:`REEMBED_JOB`, which takes no LLM slot):
one worker at a time claims it (``running`` → ``working``) under a lease it renews with every
committed batch, so the task, the dispatcher and ``manage.py reembed`` may all try; a worker
killed mid-job leaves its lease to expire and the ``jobs-memory.reembed`` schedule (every
minute) reclaims the job and hands it to a worker — within :data:`REEMBED_LEASE` of the
last batch, not after q2's retry. An embedder failure is retried by the one retry policy
(1, 2, 4 … min, at most an hour; after 8 failed attempts in a row the job is ``failed`` and
an operator re-queues it from the console's failures page). Every transition is a
:class:`~memory.core.models.reembed.ReembedStatusChange` row (append-only).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from memory.core.models.reembed import ACTIVE_STATUSES, ReembedJob, ReembedStatusChange
from memory.core.services.chunks import chunking_for, chunks_replace, flat_texts, windows_for
from memory.core.services.embeddings import embed_texts
from memory.core.vector_indexes import dense_condition, ensure_vector_index, vector_index_state
from orgmemory.embedding import fact_window_vectors, org_embedder
from orgmemory.models import OperationLogEntry
from orgmemory.services.embeddings import fact_vectors_store, stale_fact_versions
from persistence.audit_actions import AuditAction
from persistence.models import Company
from persistence.selectors.embedder import company_embedder, company_embedder_key
from persistence.services.audit import audit_record
from synthorg.embedding import EmbeddingError, default_embedder
from synthorg.errors import DomainError, NotFoundError
from synthorg.jobs.history import history_writer
from synthorg.jobs.registry import JobKind
from synthorg.jobs.services import (
    LeaseLost,
    job_claim,
    job_extend,
    job_fail,
    job_finish,
)
from synthorg.retrieval.vectors import vector_literal

logger = logging.getLogger(__name__)

BATCH_SIZE = 100
MAX_PASSES = 3
TASK = "memory.core.tasks.run_reembed_job"
#: Seconds one task works before queueing its continuation (under the q2 timeout).
TASK_TIME_BUDGET_S = 240.0
#: A worker's lease on a job, renewed with every committed batch (and after the index build).
REEMBED_LEASE = timedelta(minutes=2)
_Status = ReembedJob.Status
CLAIMED_ELSEWHERE = "claimed by another worker"
GAVE_UP_REQUEUE = "the job gave up after its retries: re-queue it on the console's failures page"
RECLAIMED = "reclaimed: the worker re-embedding this job did not renew its lease ({seconds} s)"
GAVE_UP = " (gave up after {attempts} attempts; an operator can re-queue it)"

NO_RUNNING_JOB = "Company {company} has no running re-embedding job."
ACTION_STARTED = AuditAction.MEMORY_REEMBED_STARTED
ACTION_SUPERSEDED = AuditAction.MEMORY_REEMBED_SUPERSEDED
ACTION_COMPLETED = AuditAction.MEMORY_REEMBED_COMPLETED


@dataclass(frozen=True)
class Progress:
    """What one call to :func:`reembed_job_run` did (for progress bars and the task)."""

    batches: int
    rows: int
    finished: bool
    error: str = ""


# --- which rows need a new vector ------------------------------------------------------------


def _stale_memories_sql(company_id: int, embedder_id: str, dims: int) -> tuple[str, list]:
    """Rows of the company with a vector that is not ``(embedder_id, dims)``'s."""
    return (
        f"m.company_id = %s AND m.embedding IS NOT NULL "
        f"AND NOT ({dense_condition(embedder_id, dims, escape=True)})",
        [company_id],
    )


def stale_memory_count(company: Company, embedder_id: str, dims: int) -> int:
    where, params = _stale_memories_sql(company.pk, embedder_id, dims)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM memory_memory m WHERE {where}", params)
        return int(cursor.fetchone()[0])


def _most_common_source(company: Company, embedder_id: str, dims: int) -> tuple[str, int | None]:
    where, params = _stale_memories_sql(company.pk, embedder_id, dims)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.embedder_id, vector_dims(m.embedding) FROM memory_memory m WHERE {where} "
            "GROUP BY 1, 2 ORDER BY count(*) DESC, 1 LIMIT 1",
            params,
        )
        row = cursor.fetchone()
    return (row[0], row[1]) if row else ("", None)


def _stale_fact_count(company: Company, embedder_id: str, dims: int) -> int:
    if org_embedder(company) is None:
        return 0
    return stale_fact_versions(company, embedder_id, dims).count()


# --- start -----------------------------------------------------------------------------------


@transaction.atomic
def reembed_job_start(
    *,
    company: Company,
    via: str = "config",
    principal=None,
    actor_user=None,
    check_rows: bool = True,
) -> ReembedJob | None:
    """Start re-embedding ``company``'s vectors with its current embedder, if anything needs it.

    Returns the running job (an existing one for the same embedder, or a new one), or
    ``None`` when every vector is already the current embedder's and its index exists. A
    running job for another embedder is superseded (the new one takes over its rows).
    ``check_rows=False`` (the config hook, run after every config save): when the embedder
    is the one the company's last job moved to — or, with no job yet, the default one — it
    did not change, and the rows are not counted (a count reads every row of the company).
    Raises :class:`DomainError` if the company's embedder cannot be built.
    """
    Company.objects.select_for_update().filter(pk=company.pk).first()  # one start at a time
    embedder_id, dims = company_embedder_key(company)
    now = timezone.now()
    running = ReembedJob.objects.filter(company=company, status__in=ACTIVE_STATUSES).first()
    if running is not None:
        if (running.to_embedder_id, running.to_dims) == (embedder_id, dims):
            return running
    elif not check_rows:
        last = (
            ReembedJob.objects.filter(company=company)
            .exclude(status=ReembedJob.Status.SUPERSEDED)
            .order_by("-created_at", "-id")
            .first()
        )
        unchanged = (
            (last.to_embedder_id, last.to_dims) if last is not None else _default_key()
        ) == (embedder_id, dims)
        if unchanged:
            return None
    if running is not None:
        # A worker holding it loses its lease (its next batch or outcome is refused).
        job_finish(REEMBED_JOB, running, status=_Status.SUPERSEDED, reason=running.reason, now=now)
        audit_record(
            company=company, principal=principal, actor_user=actor_user,
            action_type=ACTION_SUPERSEDED, target_type="reembed_job", target_id=running.pk,
            details={"to_embedder_id": running.to_embedder_id, "done": running.done,
                     "total": running.total, "via": via},
        )  # fmt: skip
    memories = stale_memory_count(company, embedder_id, dims)
    facts = _stale_fact_count(company, embedder_id, dims)
    if memories == 0 and facts == 0 and vector_index_state(embedder_id, dims) == "ready":
        return None
    from_id, from_dims = _most_common_source(company, embedder_id, dims)
    job = ReembedJob.objects.create(
        company=company,
        from_embedder_id=from_id,
        from_dims=from_dims,
        to_embedder_id=embedder_id,
        to_dims=dims,
        memories_total=memories,
        facts_total=facts,
        started_via=via[:16],
        created_at=now,
        updated_at=now,
        next_attempt_at=now,
    )
    reembed_history_record(job, now=now)
    audit_record(
        company=company, principal=principal, actor_user=actor_user,
        action_type=ACTION_STARTED, target_type="reembed_job", target_id=job.pk,
        risk_level="medium",
        details={"from_embedder_id": from_id, "from_dims": from_dims,
                 "to_embedder_id": embedder_id, "to_dims": dims,
                 "memories": memories, "facts": facts, "via": via},
    )  # fmt: skip
    job_id = job.pk
    transaction.on_commit(lambda: enqueue_reembed_job(job_id))
    return job


def enqueue_reembed_job(job_id: int) -> None:
    """Queue the job's task (the resume schedule picks the job up if this fails)."""
    try:
        from django_q.tasks import async_task

        async_task(TASK, job_id, task_name=f"reembed-{job_id}-{uuid.uuid4().hex[:8]}")
    except Exception:
        logger.exception("queueing re-embedding job %s failed", job_id)


def _default_key() -> tuple[str, int]:
    embedder = default_embedder()
    return embedder.embedder_id, embedder.dims


def reembed_on_config_change(company: Company) -> None:
    """Config-change hook: a changed embedder starts (or supersedes) a job."""
    try:
        reembed_job_start(company=company, via="config", check_rows=False)
    except DomainError as exc:
        logger.warning("re-embedding for company %s not started: %s", company.pk, exc)


# --- run -------------------------------------------------------------------------------------


def reembed_job_run(
    *,
    job: ReembedJob,
    batch_size: int = BATCH_SIZE,
    max_batches: int | None = None,
    time_budget: float | None = None,
    on_batch: Callable[[ReembedJob], None] | None = None,
) -> Progress:
    """Claim the job and process its batches until it completes, ``max_batches`` /
    ``time_budget`` are spent, or the embedder fails (the error is recorded and retried with
    back-off; the job stays ``running``). Must run outside a transaction. Returns what this
    call did; a job another worker holds is left alone (``error``: claimed elsewhere)."""
    if connection.in_atomic_block:
        raise RuntimeError("a re-embedding job runs outside transactions")
    claimed = job_claim(REEMBED_JOB, job.pk, queryset=ReembedJob.objects.select_related("company"))
    if claimed is None:
        status = ReembedJob.objects.filter(pk=job.pk).values_list("status", flat=True).get()
        if status in (_Status.COMPLETED, _Status.SUPERSEDED):
            return Progress(batches=0, rows=0, finished=True)
        error = GAVE_UP_REQUEUE if status == _Status.FAILED else CLAIMED_ELSEWHERE
        return Progress(batches=0, rows=0, finished=False, error=error)
    try:
        return _run_claimed(claimed, batch_size, max_batches, time_budget, on_batch)
    except LeaseLost:  # superseded, or reclaimed after a stall: the job's new owner goes on
        logger.warning("re-embedding job %s lost its lease", job.pk)
        return Progress(batches=0, rows=0, finished=True)


def reembed_job_work(job: ReembedJob, batch=None) -> bool:
    """The job kind's ``run`` (the dispatcher's per-company task): work on the claimed job
    for up to ``TASK_TIME_BUDGET_S`` and queue its continuation; ``False`` when the embedder
    failed."""
    progress = _run_claimed(job, BATCH_SIZE, None, TASK_TIME_BUDGET_S, None)
    if not progress.finished and not progress.error:
        enqueue_reembed_job(job.pk)  # budget spent: continue in a fresh task
    return not progress.error


def _run_claimed(job: ReembedJob, batch_size, max_batches, time_budget, on_batch) -> Progress:
    """Work on ``job``, claimed by this worker; record how the call ended (back to
    ``running`` with its progress kept, ``completed``, or an embedder failure retried)."""
    if job.phase == ReembedJob.Phase.INDEX:
        # Idempotent if two workers ever get here (a lease lost during a long build).
        ensure_vector_index(job.to_embedder_id, job.to_dims)
        job_extend(REEMBED_JOB, job)
        _update(job, phase=ReembedJob.Phase.MEMORIES)
    deadline = None if time_budget is None else time.monotonic() + time_budget
    batches = rows = 0
    try:
        embedder = company_embedder(job.company)
    except DomainError as exc:
        return _failed(job, str(exc), batches=0, rows=0)
    if (embedder.embedder_id, embedder.dims) != (job.to_embedder_id, job.to_dims):
        # The company switched embedder again: a new job takes over.
        reembed_job_start(company=job.company, via="resume")
        return Progress(batches=0, rows=0, finished=True)
    while True:
        if (max_batches is not None and batches >= max_batches) or (
            deadline is not None and time.monotonic() >= deadline
        ):
            job_finish(REEMBED_JOB, job, status=_Status.RUNNING, completed=False, attempts=0,
                       next_attempt_at=timezone.now())  # fmt: skip
            return Progress(batches=batches, rows=rows, finished=False)
        try:
            if job.phase == ReembedJob.Phase.MEMORIES:
                count = _memory_batch(job, embedder, batch_size)
                if count == 0:
                    _update(job, phase=ReembedJob.Phase.FACTS)
                    continue
            elif job.phase == ReembedJob.Phase.FACTS:
                count = _fact_batch(job, batch_size)
                if count == 0:
                    if _finish_or_sweep(job):
                        return Progress(batches=batches, rows=rows, finished=True)
                    continue
            else:
                return Progress(batches=batches, rows=rows, finished=True)
        except EmbeddingError as exc:
            return _failed(job, str(exc), batches=batches, rows=rows)
        batches += 1
        rows += count
        if on_batch is not None:
            on_batch(job)


def _failed(job: ReembedJob, message: str, *, batches: int, rows: int) -> Progress:
    """The embedder failed: the job waits for its next attempt (the policy's back-off; an
    attempt that committed batches first counts as the first failure in a row)."""
    logger.warning("re-embedding job %s paused: %s", job.pk, message)
    if batches:
        job.attempts = 1
    job_fail(
        REEMBED_JOB,
        job,
        status=_Status.RUNNING,
        gave_up_status=_Status.FAILED,
        reason=message[:2000],
        gave_up_suffix=GAVE_UP,
    )
    return Progress(batches=batches, rows=rows, finished=False, error=message)


def _memory_batch(job: ReembedJob, embedder, batch_size: int) -> int:
    where, params = _stale_memories_sql(job.company_id, job.to_embedder_id, job.to_dims)
    if job.memory_cursor is not None:
        where += " AND m.id > %s"
        params.append(job.memory_cursor)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.id, m.content, m.context FROM memory_memory m WHERE {where} "
            "ORDER BY m.id LIMIT %s",
            [*params, batch_size],
        )
        rows = cursor.fetchall()
    if not rows:
        return 0
    # Every window of each memory (memory.core.chunking): the first into the row, the
    # others into its chunk rows, replaced in the same transaction.
    chunking = chunking_for(job.company)
    windows = [windows_for(content, context, chunking) for _, content, context in rows]
    texts = flat_texts(windows)
    embedded = embed_texts(company=job.company, texts=texts, embedder=embedder)
    if not embedded.ok or embedded.vectors is None or embedded.embedder_id != job.to_embedder_id:
        raise EmbeddingError(f"the embedder {job.to_embedder_id} failed on a batch")
    by_text = dict(zip(texts, embedded.vectors, strict=True))
    vectors = [[by_text[text] for text in group] for group in windows]
    with transaction.atomic():
        # One statement for the batch (the BM25 statistics trigger runs per statement).
        # A row whose text changed since it was read is skipped: its own update embedded it.
        with connection.cursor() as cursor:
            cursor.execute(
                _BATCH_UPDATE_SQL,
                [
                    embedded.embedder_id,
                    [row[0] for row in rows],
                    [row[1] for row in rows],
                    [row[2] for row in rows],
                    [vector_literal(group[0]) for group in vectors],
                    job.company_id,
                ],
            )
            updated = {row[0] for row in cursor.fetchall()}
        chunks_replace(
            job.company_id,
            [(r[0], group) for r, group in zip(rows, vectors, strict=True) if r[0] in updated],
            embedded.embedder_id,
        )
        _advance(job, "memories", cursor=rows[-1][0], count=len(rows))
    return len(rows)


_BATCH_UPDATE_SQL = """
UPDATE memory_memory m
   SET embedding = v.embedding::vector, embedder_id = %s, embedding_status = 'ready'
  FROM unnest(%s::uuid[], %s::text[], %s::text[], %s::text[]) AS v(id, content, context, embedding)
 WHERE m.id = v.id AND m.content = v.content AND m.context = v.context AND m.company_id = %s
RETURNING m.id
"""


def _fact_batch(job: ReembedJob, batch_size: int) -> int:
    embedder = org_embedder(job.company)
    if embedder is None:
        return 0
    entries = stale_fact_versions(job.company, job.to_embedder_id, job.to_dims)
    if job.fact_cursor is not None:
        entries = entries.filter(operation_id__gt=job.fact_cursor)
    batch: list[OperationLogEntry] = list(entries.order_by("operation_id")[:batch_size])
    if not batch:
        return 0
    # a stale fact version is a published one: it has content
    vectors = fact_window_vectors(embedder, job.company, [entry.content or "" for entry in batch])
    with transaction.atomic():
        fact_vectors_store(entries=batch, embedder_id=embedder.embedder_id, vectors=vectors)
        _advance(job, "facts", cursor=batch[-1].operation_id, count=len(batch))
    return len(batch)


def _advance(job: ReembedJob, kind: str, *, cursor, count: int) -> None:
    """Record a committed batch of ``kind`` ("memories" / "facts"): cursor, counts (the total
    grows if more rows turned up than were counted at the start), the lease renewed —
    :class:`LeaseLost` (rolling the batch back) when the job is not this worker's any more."""
    cursor_field = "memory_cursor" if kind == "memories" else "fact_cursor"
    done, total = f"{kind}_done", f"{kind}_total"
    job_extend(REEMBED_JOB, job)  # the batch commits only while this worker holds the job
    ReembedJob.objects.filter(pk=job.pk).update(
        **{
            cursor_field: cursor,
            total: Greatest(F(total), F(done) + count),
            done: F(done) + count,
        },
        batches=F("batches") + 1,
        reason="",
    )
    _reload_progress(job)


#: What batches change on the row (the status and the lease stay this worker's view).
_PROGRESS = (
    "phase", "memories_total", "memories_done", "facts_total", "facts_done", "memory_cursor",
    "fact_cursor", "batches", "passes", "reason", "updated_at",
)  # fmt: skip


def _reload_progress(job: ReembedJob) -> None:
    job.refresh_from_db(fields=_PROGRESS)


def _finish_or_sweep(job: ReembedJob) -> bool:
    """Complete the job, or (rows with another embedder's vector behind the cursors, e.g.
    written by an import meanwhile) start one more pass over them. True when completed."""
    company = job.company
    left = stale_memory_count(company, job.to_embedder_id, job.to_dims) + _stale_fact_count(
        company, job.to_embedder_id, job.to_dims
    )
    with transaction.atomic():
        if left and job.passes < MAX_PASSES:
            job_extend(REEMBED_JOB, job)
            _update(job, memory_cursor=None, fact_cursor=None, phase=ReembedJob.Phase.MEMORIES,
                    passes=job.passes + 1)  # fmt: skip
            return False
        _reload_progress(job)
        job_finish(REEMBED_JOB, job, status=_Status.COMPLETED, phase=ReembedJob.Phase.DONE)
        audit_record(
            company=company, action_type=ACTION_COMPLETED, target_type="reembed_job",
            target_id=job.pk,
            details={"to_embedder_id": job.to_embedder_id, "to_dims": job.to_dims,
                     "memories": job.memories_done, "facts": job.facts_done,
                     "batches": job.batches, "left_for_backfill": left},
        )  # fmt: skip
    return True


def _update(job: ReembedJob, **fields) -> None:
    fields["updated_at"] = timezone.now()
    ReembedJob.objects.filter(pk=job.pk).update(**fields)
    for name, value in fields.items():
        setattr(job, name, value)


def running_job(company: Company) -> ReembedJob:
    job = ReembedJob.objects.filter(company=company, status__in=ACTIVE_STATUSES).first()
    if job is None:
        raise NotFoundError(NO_RUNNING_JOB.format(company=company.slug), code="no_reembed_job")
    return job


# --- the durable job -------------------------------------------------------------------------


#: appends the job's status to its history (``reembed_history_record(job, now=…)``)
reembed_history_record = history_writer(ReembedStatusChange, "job")


def _describe(job: ReembedJob) -> str:
    return f"{job.from_embedder_id or '—'} → {job.to_embedder_id} ({job.done}/{job.total} rows)"


REEMBED_JOB = JobKind(
    name="memory.reembed",
    model=ReembedJob,
    history=reembed_history_record,
    run=reembed_job_work,
    queued=_Status.RUNNING,
    running=_Status.WORKING,
    lease=lambda: REEMBED_LEASE,
    batch_size=1,
    select_related=("company",),
    reclaimed_reason=RECLAIMED,
    llm_slots=False,
    label="Re-embedding",
    failed_statuses=(_Status.FAILED,),
    describe=_describe,
    target_type="reembed_job",
    enqueue=enqueue_reembed_job,
)
