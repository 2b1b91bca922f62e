"""The Python client (clients/python, ``synthorg_memory``) against the real server: the
product's ASGI app under uvicorn on a free port (``live_server_url``), agents with real keys,
real HTTP. Sync and async: the round trip, the errors, the retries, the pagination."""

import asyncio

import httpx
import pytest

from memory.core.models import MemoryRevision as RevisionRow
from memory.core.models.memory import Memory
from memory.core.services.edit import memory_correct
from memory.ingestion.models import DreamRequest
from persistence.principal import Principal
from synthorg_memory import (
    AsyncMemoryClient,
    AuthenticationError,
    MemoryClient,
    NotFoundError,
    RateLimitedError,
    SynthOrgError,
    ValidationError,
)
from synthorg_memory.models import MemoryRevision, StoredMemory
from tests.persistence.factories import MembershipFactory
from tests.synthorg.test_mcp_server import committed, live_server_url  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

CONTENT = "The billing service deploys every Friday at noon UTC."


def correct(agent, memory_id, *corrections):
    """Human corrections (the console's service), as an operator of the agent's company."""
    membership = MembershipFactory(company=agent.company, role="operator")
    principal = Principal.for_human(membership.user, agent.company, "operator")
    for content, reason in corrections:
        memory_correct(
            agent=agent, memory_id=memory_id, content=content, reason=reason, principal=principal
        )
    return membership.user.get_username()


def rest(url, key, method, path, body=None):
    """The same call without the client, for comparing answers."""
    response = httpx.request(
        method, f"{url}/api/v1{path}", json=body, headers={"Authorization": f"Bearer {key}"}
    )
    return response.json()


class Recorder:
    """An httpx event hook keeping the status of every answer the client received."""

    def __init__(self):
        self.statuses = []

    def __call__(self, response):
        self.statuses.append(response.status_code)


def test_store_search_context_history_round_trip(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    with MemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
        stored = client.memories.store(
            content=CONTENT, category="semantic", tags=["Deploy", "billing"]
        )
        row = Memory.objects.get(agent=caller.agent)
        assert isinstance(stored, StoredMemory)
        assert (stored.id, stored.content, stored.tags) == (str(row.pk), CONTENT, row.tags)
        assert row.tags == ["deploy", "billing"]
        assert (stored.stored, stored.deduplicated, stored.agent_id) == (
            True, False, caller.agent.pk,
        )  # fmt: skip
        assert stored.warnings == []

        found = client.memories.search(query="when does billing deploy", limit=10)
        direct = rest(
            live_server_url, caller.raw_key, "POST", "/memories/search",
            {"query": "when does billing deploy", "limit": 10},
        )  # fmt: skip
        assert [(h.memory.id, h.memory.content) for h in found.results] == [(stored.id, CONTENT)]
        assert [h.score for h in found.results] == [h["combined"] for h in direct["results"]]
        assert found.results[0].score == found.results[0].combined > 0
        assert found.degraded == direct["degraded"] == []

        context = client.memories.context(query="when does billing deploy", token_budget=800)
        direct = rest(
            live_server_url, caller.raw_key, "POST", "/memories/context",
            {"query": "when does billing deploy", "token_budget": 800},
        )  # fmt: skip
        assert [m.model_dump() for m in context.messages] == direct["messages"]
        assert sum(CONTENT in message.content for message in context.messages) == 1
        assert [entry.id for entry in context.included] == [stored.id]

        assert list(client.memories.history(stored.id)) == []
        username = correct(
            caller.agent, stored.id, ("The billing service deploys every Thursday.", "moved")
        )
        (revision,) = client.memories.history(stored.id)
        row = RevisionRow.objects.get()
        assert isinstance(revision, MemoryRevision)
        assert (revision.id, revision.previous_content, revision.reason) == (
            str(row.pk), CONTENT, "moved",
        )  # fmt: skip
        assert (revision.corrected_by, revision.created_at) == (username, row.created_at)
        assert revision.audit_entry_id == row.audit_entry_id

        assert client.memories.get(stored.id).content == (
            "The billing service deploys every Thursday."
        )
        updated = client.memories.update(stored.id, tags=["deploy"], expires_at=None)
        assert (updated.tags, updated.expires_at) == (["deploy"], None)
        assert client.memories.count().count == 1
        assert [m.id for m in client.memories.list(tags=["deploy"])] == [stored.id]
        assert client.memories.delete(stored.id) is None
        assert not Memory.objects.filter(pk=stored.id).exists()
        assert RevisionRow.objects.count() == 0  # erased with the memory
        with pytest.raises(NotFoundError) as gone:
            client.memories.history(stored.id).__next__()
        assert (gone.value.status, gone.value.code) == (404, "memory_not_found")


def test_errors_carry_the_servers_problem(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    other = committed.agent()
    theirs = committed.store(other, "Another company's secret.")
    with (
        MemoryClient(base_url=live_server_url, api_key=caller.raw_key + "x") as client,
        pytest.raises(AuthenticationError) as refused,
    ):
        client.memories.count()
    direct = httpx.get(
        f"{live_server_url}/api/v1/memories/count",
        headers={"Authorization": f"Bearer {caller.raw_key}x"},
    )
    assert direct.status_code == 401
    assert (refused.value.status, refused.value.code, refused.value.detail) == (
        401, direct.json()["code"], direct.json()["detail"],
    )  # fmt: skip
    assert refused.value.code == "invalid_credentials"
    assert isinstance(refused.value, SynthOrgError) and refused.value.attempts == 1

    with MemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
        with pytest.raises(NotFoundError) as missing:
            client.memories.get(theirs)
        assert (missing.value.status, missing.value.code, missing.value.detail) == (
            404, "memory_not_found", "No such memory.",
        )  # fmt: skip
        with pytest.raises(ValidationError) as invalid:
            client.memories.store(content="x", category="bogus")
        assert (invalid.value.status, invalid.value.code) == (400, "validation_error")
        assert [e["field"] for e in invalid.value.errors] == ["category"]
        assert invalid.value.correlation_id is None


@pytest.fixture
def no_llm(settings):
    settings.SYNTHORG_LLM = {"BASE_URL": "", "MODEL": ""}


def test_a_429_is_retried_a_bounded_number_of_times_then_raised(
    live_server_url,  # noqa: F811
    committed,  # noqa: F811
    no_llm,
):
    caller = committed.agent()
    recorder = Recorder()
    http = httpx.Client(event_hooks={"response": [recorder]})
    client = MemoryClient(
        base_url=live_server_url,
        api_key=caller.raw_key,
        max_retries=2,
        max_retry_wait=0.01,
        http_client=http,
    )
    first = client.dreams.request()
    with pytest.raises(RateLimitedError) as limited:
        client.dreams.request()
    assert recorder.statuses == [202, 429, 429, 429]
    assert (limited.value.status, limited.value.code, limited.value.attempts) == (
        429, "dream_rate_limited", 3,
    )  # fmt: skip
    assert 3590 <= limited.value.retry_after <= 3600  # the default interval: an hour
    assert [str(pk) for pk in DreamRequest.objects.values_list("pk", flat=True)] == [first.id]
    client.close()
    assert not http.is_closed  # the caller's client stays the caller's
    http.close()

    no_retry = MemoryClient(base_url=live_server_url, api_key=caller.raw_key, max_retries=0)
    with pytest.raises(RateLimitedError) as once:
        no_retry.dreams.request()
    assert once.value.attempts == 1


def test_a_429_is_sent_again_after_retry_after(live_server_url, committed, no_llm):  # noqa: F811
    caller = committed.agent(config={"memory": {"dream": {"agent_request_interval_seconds": 1}}})
    recorder = Recorder()
    with (
        httpx.Client(event_hooks={"response": [recorder]}) as http,
        MemoryClient(base_url=live_server_url, api_key=caller.raw_key, http_client=http) as client,
    ):
        first = client.dreams.request()
        second = client.dreams.request()  # 429 Retry-After: 1, waited, then accepted
    assert recorder.statuses == [202, 429, 202]
    assert first.id != second.id
    assert DreamRequest.objects.filter(agent=caller.agent).count() == 2


def test_list_and_history_iterate_over_every_page(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    ids = [committed.store(caller, f"Fact number {i} about billing.") for i in range(5)]
    correct(caller.agent, ids[0], *[(f"Version {i}", f"r{i}") for i in range(3)])
    recorder = Recorder()
    with (
        httpx.Client(event_hooks={"response": [recorder]}) as http,
        MemoryClient(base_url=live_server_url, api_key=caller.raw_key, http_client=http) as client,
    ):
        listed = [memory.id for memory in client.memories.list(page_size=2)]
        assert recorder.statuses == [200, 200, 200]  # three pages of 2, 2, 1
        revisions = [r.reason for r in client.memories.history(ids[0], page_size=2)]
    newest_first = Memory.objects.filter(agent=caller.agent).order_by("-created_at", "-id")
    assert listed == [str(pk) for pk in newest_first.values_list("pk", flat=True)]
    assert sorted(listed) == sorted(ids)
    assert revisions == ["r0", "r1", "r2"]


def test_the_async_client_has_the_same_surface(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    ids = [committed.store(caller, f"Old fact {i}.") for i in range(3)]

    async def work():
        async with AsyncMemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
            stored = await client.memories.store(content=CONTENT, category="semantic")
            found = await client.memories.search(query="when does billing deploy", limit=10)
            context = await client.memories.context(
                query="when does billing deploy", token_budget=800
            )
            listed = [m.id async for m in client.memories.list(page_size=2)]
            history = [r async for r in client.memories.history(stored.id)]
            try:
                await client.memories.get("00000000-0000-0000-0000-000000000000")
            except NotFoundError as exc:
                missing = exc
        async with AsyncMemoryClient(base_url=live_server_url, api_key="wrong") as client:
            try:
                await client.memories.count()
            except AuthenticationError as exc:
                refused = exc
        return stored, found, context, listed, history, missing, refused

    stored, found, context, listed, history, missing, refused = asyncio.run(work())
    assert stored.content == CONTENT
    assert str(Memory.objects.get(content=CONTENT).pk) == stored.id
    assert found.results[0].memory.id == stored.id
    direct = rest(
        live_server_url, caller.raw_key, "POST", "/memories/context",
        {"query": "when does billing deploy", "token_budget": 800},
    )  # fmt: skip
    assert [m.model_dump() for m in context.messages] == direct["messages"]
    assert listed == [stored.id, *reversed(ids)]
    assert history == []
    assert (missing.status, missing.code) == (404, "memory_not_found")
    assert (refused.status, refused.code) == (401, "malformed_credentials")


def test_shared_org_executions_and_conversations_against_the_server(
    live_server_url,  # noqa: F811
    committed,  # noqa: F811
):
    from memory.core.models.memory import Memory as MemoryRow
    from memory.ingestion.models import Conversation
    from memory.procedural.models import ExecutionReport
    from orgmemory.models import OrgFact

    caller = committed.agent()
    caller.agent.seniority = "senior"  # may publish conventions (the default write rules)
    caller.agent.save(update_fields=["seniority"])
    with MemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
        published = client.shared.publish(
            content="The VPN is split-tunnel for the office network.", category="semantic"
        )
        assert (published.stored, published.deduplicated) == (True, False)
        hits = client.shared.search(query="VPN split-tunnel").results
        assert [(h.memory.id, h.is_shared) for h in hits] == [(published.id, True)]
        assert client.shared.retract(published.id) is None
        assert not MemoryRow.objects.filter(pk=published.id).exists()

        fact = client.org.publish(
            content="Branches are named after the ticket.", category="convention", tags=["git"]
        )
        assert (fact.version, fact.content, fact.tags, fact.author.is_human) == (
            1, "Branches are named after the ticket.", ["git"], False,
        )  # fmt: skip
        assert client.org.fact(fact.fact_id) == fact
        assert [f.fact_id for f in client.org.facts(category="convention")] == [fact.fact_id]
        queried = client.org.query(context="how are branches named", limit=5)
        assert [f.fact_id for f in queried.results] == [fact.fact_id]
        newer = client.org.publish(
            content="Branches are named after the ticket id.",
            category="convention",
            fact_id=fact.fact_id,
            expected_version=1,
        )
        assert newer.version == 2
        retracted = client.org.retract(fact.fact_id, reason="moved to the wiki")
        assert retracted.retracted_at is not None
        history = client.org.history(fact.fact_id)
        assert [(e.version, e.operation_type) for e in history] == [
            (1, "PUBLISH"), (2, "PUBLISH"), (retracted.version, "RETRACT"),
        ]  # fmt: skip
        assert list(client.org.policies()) == []
        assert OrgFact.objects.filter(company=caller.company).exists()

        accepted = client.executions.report(
            outcome="failed",
            task_title="Deploy billing",
            error={"category": "timeout", "message": "the deploy hung"},
            tool_calls=[{"name": "deploy", "status": "timeout", "duration_ms": 1200}],
            duration_ms=1500,
        )
        report = client.executions.get(accepted.id)
        row = ExecutionReport.objects.get(pk=accepted.id)
        assert (report.id, report.outcome, report.task_title) == (
            str(row.pk), "failed", "Deploy billing",
        )  # fmt: skip
        assert report.error.category == "timeout"
        assert [r.id for r in client.executions.list(outcome="failed")] == [accepted.id]

        flushed = client.conversations.add_messages(
            "chat-7",
            [
                {"role": "user", "content": "Where do invoices go?"},
                {"role": "assistant", "content": "To the billing inbox."},
            ],
        )
        assert (flushed.conversation_id, flushed.accepted, flushed.first_seq, flushed.last_seq) == (
            "chat-7", 2, 1, 2,
        )  # fmt: skip
        assert [c.conversation_id for c in client.conversations.list()] == ["chat-7"]
        messages = list(client.conversations.messages("chat-7", page_size=1))
        assert [(m.seq, m.role, m.content) for m in messages] == [
            (1, "user", "Where do invoices go?"), (2, "assistant", "To the billing inbox."),
        ]  # fmt: skip
        context = client.conversations.context("chat-7", token_budget=500)
        assert [m.content for m in context.messages] == [m.content for m in messages]
        assert list(client.conversations.extractions("chat-7")) == []
        assert Conversation.objects.get(agent=caller.agent).external_id == "chat-7"


def test_subjects_store_filter_read_and_erase(live_server_url, committed):  # noqa: F811
    caller = committed.agent()
    with MemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
        tea = client.memories.store(
            content="Prefers green tea in the morning.", category="social", subject="user-42"
        )
        client.memories.store(
            content="Prefers black tea in the evening.", category="social", subject="user-7"
        )
        assert tea.subject == "user-42"
        found = client.memories.search(query="tea", subject="user-42")
        assert [hit.memory.id for hit in found.results] == [tea.id]
        assert [m.id for m in client.memories.list(subject="user-42")] == [tea.id]
        context = client.memories.context(query="tea", token_budget=800, subject="user-7")
        text = " ".join(message.content for message in context.messages)
        assert "black tea" in text and "green tea" not in text
        assert [m.id for m in client.subjects.memories("user-42")] == [tea.id]
        with pytest.raises(ValidationError) as bad:
            client.memories.store(content="x", category="social", subject=" user-42")
        assert bad.value.code == "validation_error"
        assert bad.value.errors[0]["code"] == "subject_invalid"

    async def erase():
        async with AsyncMemoryClient(base_url=live_server_url, api_key=caller.raw_key) as client:
            listed = [m.id async for m in client.subjects.memories("user-42")]
            return listed, await client.subjects.erase("user-42", reason="ticket 7")

    listed, receipt = asyncio.run(erase())
    assert listed == [tea.id]
    assert (receipt.subject, receipt.scope, receipt.agent_id) == (
        "user-42", "agent", caller.agent.pk,
    )  # fmt: skip
    # the memory, and the logged search that filtered by the subject
    assert (receipt.counts, receipt.total) == ({"memories": 1, "request log entries": 1}, 2)
    assert receipt.retained == ["execution reports"]
    assert list(Memory.objects.filter(agent=caller.agent).values_list("subject", flat=True)) == [
        "user-7"
    ]
