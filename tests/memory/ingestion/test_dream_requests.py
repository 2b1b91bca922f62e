"""An agent asks for a deep dream (REST ``POST /dreams``, the ``request_dream`` tool): rate
limits per agent and per company (429 + Retry-After), the queued task under the company's
LLM slots (busy: deferred, nothing runs), and the no-LLM path (extractive)."""

from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone
from django_q.models import OrmQ

from memory.ingestion.models import DreamRequest, DreamRequestStatusChange, DreamRun
from memory.ingestion.services.dream import current_core
from memory.ingestion.services.dream_requests import (
    AGENT_LIMITED,
    COMPANY_LIMITED,
    DEFERRED,
    DREAM_DISABLED,
    DREAM_REQUEST_JOB,
    dream_request,
)
from memory.ingestion.services.extraction import conversation_extract
from memory.ingestion.tasks import dream_requested
from memory.interfaces.tools.catalogue import DREAM_QUEUED
from persistence.services.companies import company_config_set
from synthorg.errors import RateLimitedError
from synthorg.jobs.dispatch import jobs_dispatch
from synthorg.jobs.models import JobTurn
from synthorg.jobs.services import SLOT_DEFER, job_claim
from synthorg.jobs.tasks import jobs_company
from synthorg.llm.slots import slot_key
from synthorg.schedules import LLM_CLUSTER
from tests.conftest import make_agent_caller
from tests.memory.ingestion.conftest import fact, flush, reply

pytestmark = pytest.mark.django_db

DREAMS = "/api/v1/dreams"
CALL = "/api/v1/memories/tools/call"
KIND = DREAM_REQUEST_JOB.name


def journal(caller, llm=None, text="Ana said billing deploys move to Fridays."):
    conversation = flush(caller.agent, [text])
    if llm is not None:
        reply(llm, {"facts": [fact("Billing deploys every Friday.")]})
    return conversation_extract(conversation=conversation, force=True)


def dream_config(company, **dream):
    company_config_set(company=company, data={"memory": {"dream": dream}})


def test_rest_request_without_llm_queues_then_runs_the_extractive_dream(
    caller, no_llm, django_capture_on_commit_callbacks
):
    journal(caller)
    with django_capture_on_commit_callbacks(execute=True):
        response = caller.client.post(DREAMS)
    assert response.status_code == 202, response.content
    body = response.json()
    request = DreamRequest.objects.get()
    assert body == {
        "id": str(request.pk),
        "status": "queued",
        "method": "extractive",
        "via": "rest",
        "deferrals": 0,
        "attempts": 0,
        "reason": "",
        "next_attempt_at": body["requested_at"],  # due at once
        "requested_at": body["requested_at"],
        "run": None,
    }
    assert (request.agent_id, request.company_id) == (caller.agent.pk, caller.company.pk)
    [queued] = OrmQ.objects.all()
    assert queued.task["func"] == "memory.ingestion.tasks.dream_requested"
    assert queued.task["kwargs"] == {"request_id": str(request.pk)}
    assert queued.key == LLM_CLUSTER  # the LLM workers' queue

    assert dream_requested(str(request.pk)) == "succeeded"  # what the LLM worker runs
    run = DreamRun.objects.get()
    assert (run.trigger, run.method, run.status) == ("agent", "extractive", "succeeded")
    assert current_core(caller.agent).pk == run.core_memory_id
    detail = caller.client.get(f"{DREAMS}/requests/{request.pk}").json()
    assert (detail["status"], detail["run"]["id"], detail["run"]["method"]) == (
        "ran",
        str(run.pk),
        "extractive",
    )
    assert dream_requested(str(request.pk)) is None  # ran once; a duplicate task is a no-op
    assert DreamRun.objects.count() == 1


def test_a_second_request_within_the_interval_is_429_with_retry_after(caller, no_llm):
    first = caller.client.post(DREAMS)
    assert first.status_code == 202
    again = caller.client.post(DREAMS)
    assert again.status_code == 429
    assert again["Content-Type"] == "application/problem+json"
    problem = again.json()
    assert problem["code"] == "dream_rate_limited"
    assert again["Retry-After"] == str(problem["retry_after"])
    assert 1 <= problem["retry_after"] <= 3600
    assert DreamRequest.objects.count() == 1  # the refusal recorded nothing


def test_agent_limit_exact_wait_and_reopening(caller, no_llm):
    t0 = timezone.now()
    dream_request(agent=caller.agent, now=t0)
    with pytest.raises(RateLimitedError) as refused:
        dream_request(agent=caller.agent, now=t0 + timedelta(seconds=600))
    assert (refused.value.code, refused.value.retry_after) == ("dream_rate_limited", 3000)
    assert refused.value.detail == AGENT_LIMITED.format(ago=600, interval=3600, wait=3000)
    dream_request(agent=caller.agent, now=t0 + timedelta(seconds=3600))
    assert DreamRequest.objects.count() == 2


def test_the_interval_knob_acts(caller, no_llm):
    dream_config(caller.company, agent_request_interval_seconds=60)
    t0 = timezone.now()
    dream_request(agent=caller.agent, now=t0)
    with pytest.raises(RateLimitedError) as refused:
        dream_request(agent=caller.agent, now=t0 + timedelta(seconds=59))
    assert refused.value.retry_after == 1
    dream_request(agent=caller.agent, now=t0 + timedelta(seconds=60))


def test_company_limit_counts_every_agent_of_the_company(company, no_llm):
    dream_config(company, company_requests_per_hour=2)
    first, second, third = (make_agent_caller(company=company) for _ in range(3))
    outsider = make_agent_caller()
    t0 = timezone.now()
    dream_request(agent=first.agent, now=t0)
    dream_request(agent=second.agent, now=t0 + timedelta(seconds=100))
    with pytest.raises(RateLimitedError) as refused:
        dream_request(agent=third.agent, now=t0 + timedelta(seconds=200))
    assert (refused.value.code, refused.value.retry_after) == ("dream_company_rate_limited", 3400)
    assert refused.value.detail == COMPANY_LIMITED.format(limit=2, wait=3400)
    dream_request(agent=outsider.agent, now=t0 + timedelta(seconds=200))  # another company
    dream_request(agent=third.agent, now=t0 + timedelta(seconds=3601))  # the first left the hour
    assert DreamRequest.objects.filter(company=company).count() == 3


def test_refusals_422(caller, no_llm):
    dream_config(caller.company, enabled=False)
    disabled = caller.client.post(DREAMS)
    assert (disabled.status_code, disabled.json()["code"]) == (422, "dream_disabled")
    assert disabled.json()["detail"] == DREAM_DISABLED
    session = make_agent_caller(memory_level="session")
    refused = session.client.post(DREAMS)
    assert (refused.status_code, refused.json()["code"]) == (422, "dream_not_persistent")
    assert not DreamRequest.objects.exists()


def history(request) -> list[tuple]:
    return list(
        DreamRequestStatusChange.objects.filter(request_id=request.pk).values_list(
            "status", "attempt"
        )
    )


def test_with_llm_busy_slots_defer_and_its_turn_runs_the_llm_dream(caller, llm):
    journal(caller, llm)
    request = dream_request(agent=caller.agent, via="mcp")
    assert request.method == "llm"
    holder = connections.create_connection("default")
    try:
        with holder.cursor() as cursor:  # another worker holds the company's only slot
            cursor.execute("SELECT pg_advisory_lock(%s)", [slot_key(caller.company.pk, 0)])
        calls = len(llm.requests_to(llm.CHAT_COMPLETIONS))
        assert dream_requested(str(request.pk)) is None
        assert len(llm.requests_to(llm.CHAT_COMPLETIONS)) == calls  # no LLM call
        request.refresh_from_db()
        # a deferral, not an attempt: queued, due shortly, waiting for its turn
        assert (request.status, request.deferrals, request.attempts, request.run_id) == (
            "queued",
            1,
            0,
            None,
        )
        assert request.reason == DEFERRED.format(limit=1)
        assert request.next_attempt_at == request.updated_at + SLOT_DEFER
        assert list(JobTurn.objects.values_list("company_id", "kind")) == [
            (caller.company.pk, "ingestion.dream_request")
        ]
        assert not DreamRun.objects.exists()
    finally:
        # the other worker lets go of the slot (an explicit unlock: closing the session frees
        # it only once the server has ended that backend, a moment later)
        with holder.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [slot_key(caller.company.pk, 0)])
        holder.close()
    reply(llm, {"core_summary": "Billing deploys Fridays.", "diary": "Learned the deploy day."})
    assert jobs_company(KIND, caller.company.pk, now=request.next_attempt_at) == {
        "reclaimed": 0,
        "retried": 1,
        "waiting": 0,
        "busy": False,
    }
    request.refresh_from_db()
    assert (request.status, request.run.method, request.run.trigger) == ("ran", "llm", "agent")
    assert (request.attempts, request.next_attempt_at, request.claimed_until) == (1, None, None)
    assert current_core(caller.agent).content == "Billing deploys Fridays."
    assert history(request) == [
        ("queued", 0),
        ("running", 1),
        ("queued", 0),
        ("running", 1),
        ("ran", 1),
    ]
    assert not JobTurn.objects.exists()
    assert dream_requested(str(request.pk)) is None  # ran once; a duplicate task is a no-op


def test_a_failed_llm_dream_is_retried_with_back_off(caller, llm):
    journal(caller, llm)
    request = dream_request(agent=caller.agent)
    reply(llm, {"error": {"message": "upstream overloaded", "type": "server_error"}}, status=500)

    assert dream_requested(str(request.pk)) == "failed"

    request.refresh_from_db()
    failed_run = DreamRun.objects.get()
    assert (failed_run.status, failed_run.method) == ("failed", "llm")
    assert (request.status, request.attempts, request.run_id) == ("failed", 1, None)
    assert request.reason == f"llm_error: {failed_run.error}"
    assert request.next_attempt_at == request.updated_at + timedelta(minutes=1)
    assert current_core(caller.agent) is None  # nothing written by the failed dream

    reply(llm, {"core_summary": "Billing deploys Fridays.", "diary": "Learned the deploy day."})
    assert jobs_company(KIND, caller.company.pk, now=request.next_attempt_at)["retried"] == 1
    request.refresh_from_db()
    assert (request.status, request.attempts, request.run.status) == ("ran", 2, "succeeded")
    assert current_core(caller.agent).content == "Billing deploys Fridays."
    assert [status for status, _ in history(request)] == [
        "queued",
        "running",
        "failed",
        "queued",
        "running",
        "ran",
    ]


def test_a_request_whose_worker_died_runs_again_when_its_lease_ends(caller, no_llm):
    """kill -9 of the worker mid-dream: the request stays ``running`` until its lease ends
    (seconds, not q2's 900 s retry), then the dispatcher makes it due and runs it."""
    journal(caller)
    t0 = timezone.now()
    request = dream_request(agent=caller.agent, now=t0)
    claimed = job_claim(DREAM_REQUEST_JOB, request.pk, now=t0)  # the worker that dies
    assert claimed.status == "running"
    assert dream_requested(str(request.pk)) is None  # another worker: not claimable

    within = claimed.claimed_until - timedelta(seconds=1)
    assert jobs_dispatch(DREAM_REQUEST_JOB, now=within).reclaimed == 0
    after = claimed.claimed_until + timedelta(seconds=1)
    dispatch = jobs_dispatch(DREAM_REQUEST_JOB, now=after)
    assert (dispatch.reclaimed, dispatch.companies) == (1, (caller.company.pk,))
    assert jobs_company(KIND, caller.company.pk, now=after)["retried"] == 1
    request.refresh_from_db()
    assert (request.status, request.attempts, request.run.method) == ("ran", 2, "extractive")
    assert DreamRun.objects.count() == 1


def test_erasing_the_agent_keeps_the_content_free_history(caller, no_llm):
    from persistence.services.erasure import agent_erase

    journal(caller)
    request = dream_request(agent=caller.agent)
    assert dream_requested(str(request.pk)) == "succeeded"
    agent_erase(agent=caller.agent, reason="test")
    assert not DreamRequest.objects.filter(pk=request.pk).exists()
    assert [status for status, _ in history(request)] == ["queued", "running", "ran"]
    with pytest.raises(Exception, match="append-only"):
        DreamRequestStatusChange.objects.filter(request_id=request.pk).delete()


def test_request_dream_tool_says_what_it_does_without_llm(caller, no_llm):
    response = caller.client.post(CALL, {"name": "request_dream", "arguments": {}}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    request = DreamRequest.objects.get()
    assert body["content"] == DREAM_QUEUED["extractive"].format(id=request.pk)
    assert (body["data"]["id"], body["data"]["method"], body["data"]["via"]) == (
        str(request.pk),
        "extractive",
        "rest",
    )
    again = caller.client.post(CALL, {"name": "request_dream", "arguments": {}}, format="json")
    assert again.status_code == 429 and again.json()["code"] == "dream_rate_limited"
    assert again["Retry-After"] == str(again.json()["retry_after"])


def test_another_agents_request_is_404(caller, peer, no_llm):
    request = dream_request(agent=caller.agent)
    missing = peer.client.get(f"{DREAMS}/requests/{request.pk}")
    assert (missing.status_code, missing.json()["code"]) == (404, "dream_request_not_found")


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_of_one_agent_admit_exactly_one(settings):
    """A's request is written but not yet committed when B asks: B must wait for A (the
    per-company advisory lock) and then count A's row. Without the lock B would see no row
    and a second dream would be queued. Ordered by events, not by time."""
    import threading

    from django.db import connection, transaction

    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}
    caller = make_agent_caller()
    a_written, b_done, commit_a = threading.Event(), threading.Event(), threading.Event()
    outcomes: dict[str, str] = {}

    def first():
        try:
            with transaction.atomic():
                dream_request(agent=caller.agent)
                a_written.set()
                commit_a.wait(timeout=60)
            outcomes["a"] = "queued"
        finally:
            connection.close()

    def second():
        try:
            a_written.wait(timeout=60)
            dream_request(agent=caller.agent)
            outcomes["b"] = "queued"
        except RateLimitedError as exc:
            outcomes["b"] = exc.code
        finally:
            b_done.set()
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    assert a_written.wait(timeout=60)

    def b_waits_on_a_lock() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
            )
            return cursor.fetchone()[0] > 0

    # B either finished (no lock to wait on) or is waiting for A's lock: then let A commit.
    while not b_done.is_set() and not b_waits_on_a_lock():
        b_done.wait(timeout=0.05)
    commit_a.set()
    for thread in threads:
        thread.join(timeout=60)
    assert outcomes == {"a": "queued", "b": "dream_rate_limited"}
    assert DreamRequest.objects.filter(agent=caller.agent).count() == 1


def test_the_console_agent_page_lists_its_dream_requests_only(caller, no_llm):
    from django.test import Client

    from tests.persistence.factories import MembershipFactory

    journal(caller)
    request = dream_request(agent=caller.agent)
    dream_requested(str(request.pk))
    other = make_agent_caller(company=caller.company, memory_level=caller.agent.memory_level)
    dream_request(agent=other.agent)  # another agent's request: not on this page
    membership = MembershipFactory(company=caller.company, role="viewer", user__password=None)
    console = Client()
    console.force_login(membership.user)
    html = console.get(f"/console/agents/{caller.agent.pk}").content.decode()
    assert html.count('class="dream-request-row"') == 1
    row = html.split('class="dream-request-row"')[1].split("</tr>")[0]
    assert "Extractive" in row and ">Ran<" in row and ">Succeeded<" in row
    quiet = make_agent_caller(company=caller.company)
    empty = console.get(f"/console/agents/{quiet.agent.pk}")
    assert "This agent has not asked for a dream" in empty.content.decode()
