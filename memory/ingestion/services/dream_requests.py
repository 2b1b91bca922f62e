"""An agent asks for a deep dream now: rate-limited, queued, run under the company's LLM slot.

:func:`dream_request` (REST ``POST /api/v1/dreams``, the ``request_dream`` tool, MCP, the
:class:`~memory.interfaces.engine.MemoryEngine` facade's ``dream()``) records a
:class:`DreamRequest` and queues :data:`DREAM_REQUEST_TASK` on the LLM cluster after the
commit. Limits, from ``memory.dream`` (both counted on the request rows, under a per-company
advisory lock so two concurrent requests cannot both slip under them):

* one request per agent per ``agent_request_interval_seconds`` (429 ``dream_rate_limited``),
* ``company_requests_per_hour`` requests per company in any hour (429
  ``dream_company_rate_limited``);

each 429 carries ``Retry-After``: the seconds until the same request would be accepted.

A request is a **durable job** (:mod:`synthorg.jobs`, the kind :data:`DREAM_REQUEST_JOB`):
the task (:func:`dream_request_run`) claims it under a lease and runs the one dream there
is, :func:`agent_dream` (trigger ``agent``), so an agent-asked dream writes its core exactly
as a scheduled one. With an LLM configured it takes one of the company's LLM slots
(:mod:`synthorg.llm.slots`) without waiting; every slot busy ⇒ nothing runs, the request
stays ``queued`` (a deferral, not an attempt), due again shortly, and waits for its turn —
the slot's holder serves it before letting go. An LLM dream that fails is retried with the
kernel's back-off (``failed`` with ``next_attempt_at``; given up after its last attempt,
an operator can re-queue it); a worker that dies mid-dream leaves the request ``running``
until its lease ends, then the every-minute dispatcher runs it again. With no LLM the
extractive dream runs (``method`` ``extractive``: the previous core and the journal's key
facts and anchors, verbatim).
"""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from memory.core.llm import completion_provider_for
from memory.ingestion.models import DreamRequest, DreamRequestStatusChange, DreamRun
from memory.ingestion.services.dream import NOT_PERSISTENT, agent_dream
from persistence.models import Agent
from persistence.selectors.config import company_config
from synthorg.enums import MemoryLevel
from synthorg.errors import RateLimitedError, UnprocessableError
from synthorg.jobs.dispatch import SLOT_DEFERRED, job_llm_slot
from synthorg.jobs.history import history_writer
from synthorg.jobs.registry import JobKind
from synthorg.jobs.services import job_claim, job_execute, job_fail, job_finish
from synthorg.schedules import LLM_CLUSTER

DREAM_REQUEST_TASK = "memory.ingestion.tasks.dream_requested"
DEFERRED = SLOT_DEFERRED
LLM_FAILURE = "llm_error"
GAVE_UP = " (gave up after {attempts} attempts; an operator can re-queue it)"
AGENT_LIMITED = (
    "You asked for a dream {ago} s ago; this company allows one per "
    "{interval} s (memory.dream.agent_request_interval_seconds). Retry after {wait} s."
)
COMPANY_LIMITED = (
    "Your company's agents asked for {limit} dreams in the last hour, its limit "
    "(memory.dream.company_requests_per_hour). Retry after {wait} s."
)
DREAM_DISABLED = "Deep dream is disabled for this company (memory.dream.enabled: false)."
HOUR = timedelta(hours=1)

logger = logging.getLogger(__name__)


def _seconds_until(moment: datetime, now: datetime) -> int:
    return max(1, math.ceil((moment - now).total_seconds()))


@transaction.atomic
def dream_request(*, agent: Agent, via: str = "rest", now: datetime | None = None) -> DreamRequest:
    """Record and queue a dream of ``agent`` or refuse it (422 / 429); see the module doc."""
    now = now or timezone.now()
    config = company_config(agent.company).memory.dream
    if not config.enabled:
        raise UnprocessableError(DREAM_DISABLED, code="dream_disabled")
    if agent.memory_level != MemoryLevel.PERSISTENT:
        raise UnprocessableError(
            NOT_PERSISTENT.format(level=agent.memory_level).capitalize() + ".",
            code="dream_not_persistent",
        )
    with connection.cursor() as cursor:  # one company's requests are counted one at a time
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            [f"dream-request:{agent.company_id}"],
        )
    requests = DreamRequest.objects.filter(company_id=agent.company_id)
    last = requests.filter(agent=agent).order_by("-requested_at").first()
    interval = timedelta(seconds=config.agent_request_interval_seconds)
    if last is not None and now - last.requested_at < interval:
        wait = _seconds_until(last.requested_at + interval, now)
        ago = int((now - last.requested_at).total_seconds())
        raise RateLimitedError(
            AGENT_LIMITED.format(
                ago=ago, interval=config.agent_request_interval_seconds, wait=wait
            ),
            retry_after=wait,
            code="dream_rate_limited",
        )
    limit = config.company_requests_per_hour
    window = list(
        requests.filter(requested_at__gt=now - HOUR)
        .order_by("-requested_at")
        .values_list("requested_at", flat=True)[:limit]
    )
    if len(window) >= limit:
        wait = _seconds_until(window[-1] + HOUR, now)
        raise RateLimitedError(
            COMPANY_LIMITED.format(limit=limit, wait=wait),
            retry_after=wait,
            code="dream_company_rate_limited",
        )
    llm = completion_provider_for(company=agent.company, agent=agent) is not None
    request = DreamRequest.objects.create(
        company_id=agent.company_id,
        agent=agent,
        via=via,
        method=DreamRun.Method.LLM if llm else DreamRun.Method.EXTRACTIVE,
        requested_at=now,
        created_at=now,
        updated_at=now,
        next_attempt_at=now,  # due: its task runs it, or the dispatcher's next tick
    )
    dream_request_history(request, now=now)
    request_id = request.pk
    transaction.on_commit(lambda: _enqueue(request_id))
    return request


def _enqueue(request_id) -> None:
    try:
        from django_q.tasks import async_task

        async_task(DREAM_REQUEST_TASK, request_id=str(request_id), cluster=LLM_CLUSTER)
    except Exception:  # the request is due: the dispatcher's next tick runs it
        logger.exception("queueing dream request %s failed", request_id)


def dream_request_run(*, request: DreamRequest, now: datetime | None = None) -> DreamRun | None:
    """Claim and run a queued request's dream; ``None`` when it was not claimable (it ran,
    another worker has it) or the company's LLM slots were busy (deferred)."""
    job = job_claim(DREAM_REQUEST_JOB, request.pk, now=now)
    if job is None:
        return None
    job_execute(DREAM_REQUEST_JOB, job, now)
    return job.__dict__.get("_dream_run")


def _dream(job: DreamRequest, *, now: datetime) -> DreamRun | None:
    agent = job.agent
    provider = completion_provider_for(company=agent.company, agent=agent)
    if provider is None:
        run = agent_dream(agent=agent, trigger="agent", now=now)
    else:
        with job_llm_slot(DREAM_REQUEST_JOB, job, now=now, deferrals=job.deferrals + 1) as slot:
            if not slot:
                return None
            run = agent_dream(agent=agent, trigger="agent", provider=provider, now=now)
    if _llm_failed(run):
        # The LLM failed (an outage, a refused answer): the dream is asked again later.
        job_fail(
            DREAM_REQUEST_JOB,
            job,
            status=DreamRequest.Status.FAILED,
            reason=f"{LLM_FAILURE}: {run.error}",
            now=now,
            gave_up_suffix=GAVE_UP,
        )
        return run
    job_finish(DREAM_REQUEST_JOB, job, status=DreamRequest.Status.RAN, now=now, run=run)
    return run


def dream_request_job_run(job: DreamRequest, now: datetime | None) -> bool:
    """The job kind's ``run``: dream for one claimed request (``now``: its claim's clock, or
    the batch's); ``False`` when the LLM failed (the company's retry batch stops)."""
    run = _dream(job, now=now or timezone.now())
    job.__dict__["_dream_run"] = run  # what the request's own task answers
    return not (run is not None and _llm_failed(run))


def _llm_failed(run: DreamRun) -> bool:
    """The dream's LLM call failed (an outage, a refused answer): the request is retried."""
    return run.status == DreamRun.Status.FAILED and run.method == DreamRun.Method.LLM


#: Appends the request's current status to its (content-free) history.
dream_request_history = history_writer(DreamRequestStatusChange, "request")


DREAM_REQUEST_JOB = JobKind(
    name="ingestion.dream_request",
    model=DreamRequest,
    history=dream_request_history,
    run=dream_request_job_run,
    select_related=("agent", "agent__company"),
    label="Dream request",
    crashed_status=DreamRequest.Status.FAILED,
    failed_statuses=(DreamRequest.Status.FAILED,),
    describe=lambda job: f"a dream of {job.agent.name} (asked via {job.via})",
    target_type="dream_request",
    enqueue=_enqueue,
)
