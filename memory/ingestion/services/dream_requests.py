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

The task (:func:`dream_request_run`) runs the one dream there is, :func:`agent_dream`
(trigger ``agent``), so an agent-asked dream writes its core exactly as a scheduled one.
With an LLM configured it takes one of the company's LLM slots (:mod:`synthorg.llm.slots`)
without waiting; every slot busy ⇒ nothing runs, the request stays ``queued`` and is re-armed
:data:`~memory.ingestion.services.dream.DREAM_DEFER` later. With no LLM there is no slot to
take: the extractive dream runs at once (``method`` ``extractive``: the previous core and the
journal's key facts and anchors, verbatim).
"""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from memory.core.llm import completion_provider_for
from memory.ingestion.models import DreamRequest, DreamRun
from memory.ingestion.services.dream import DREAM_DEFER, NOT_PERSISTENT, agent_dream
from persistence.models import Agent
from persistence.selectors.config import company_config
from synthorg.enums import MemoryLevel
from synthorg.errors import RateLimitedError, UnprocessableError
from synthorg.llm.slots import company_llm_slot
from synthorg.schedules import LLM_CLUSTER, schedule_once

DREAM_REQUEST_TASK = "memory.ingestion.tasks.dream_requested"
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
    )
    request_id = request.pk
    transaction.on_commit(lambda: _enqueue(request_id))
    return request


def _enqueue(request_id) -> None:
    try:
        from django_q.tasks import async_task

        async_task(DREAM_REQUEST_TASK, request_id=str(request_id), cluster=LLM_CLUSTER)
    except Exception:  # the request stays queued; the deferral schedule is the retry
        logger.exception("queueing dream request %s failed", request_id)
        _rearm(request_id, timezone.now())


def _rearm(request_id, now: datetime) -> None:
    schedule_once(
        name=f"ingestion-dream-request:{request_id}",
        func=DREAM_REQUEST_TASK,
        kwargs={"request_id": str(request_id)},
        at=now + DREAM_DEFER,
        cluster=LLM_CLUSTER,
    )


def dream_request_run(*, request: DreamRequest, now: datetime | None = None) -> DreamRun | None:
    """Run a queued request's dream; ``None`` when the company's LLM slots were busy (the
    request is re-armed) or it already ran."""
    if request.status != DreamRequest.Status.QUEUED:
        return None
    now = now or timezone.now()
    agent = request.agent
    provider = completion_provider_for(company=agent.company, agent=agent)
    if provider is None:
        return _ran(request, agent_dream(agent=agent, trigger="agent", now=now))
    with company_llm_slot(agent.company_id) as slot:
        if not slot:
            DreamRequest.objects.filter(pk=request.pk).update(deferrals=request.deferrals + 1)
            _rearm(request.pk, now)
            return None
        return _ran(request, agent_dream(agent=agent, trigger="agent", provider=provider, now=now))


def _ran(request: DreamRequest, run: DreamRun) -> DreamRun:
    request.status = DreamRequest.Status.RAN
    request.run = run
    request.save(update_fields=["status", "run"])
    return run
