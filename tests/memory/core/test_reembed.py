"""Switching a company's embedder: the re-embedding job starts, resumes after an
interruption without redoing rows, reports progress, keeps search answering (degraded
"reembedding", no cross-embedder comparison) and never touches another company's rows."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from memory.core.models.memory import Memory
from memory.core.models.reembed import ReembedJob
from memory.core.services.reembed import reembed_job_run, reembed_job_start
from memory.core.vector_indexes import vector_index_state
from orgmemory.models import FactVersionEmbedding
from orgmemory.services.facts import fact_publish
from persistence.models import AuditEntry
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from tests.memory.factories import MemoryFactory
from tests.memory.wide_embedders import use_wide_embedder, words_handler, words_server
from tests.persistence.factories import AgentFactory, CompanyFactory, MembershipFactory
from tests.support.openai_server import ScriptedResponse, error_payload

pytestmark = pytest.mark.django_db(transaction=True)

OLD = "old-embedder"
TEXTS = [
    "The billing service deploys every Friday at noon.",
    "Ana prefers green tea in the morning.",
    "Grafana dashboards live on port 3000.",
    "The staging database resets every Monday.",
    "Invoices are approved by the finance lead.",
    "Kubernetes nodes are patched on Tuesdays.",
    "The billing database is backed up nightly.",
]


def old_vector(seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=384)
    return (v / np.linalg.norm(v)).astype(np.float32).tolist()


def seed_company(texts=TEXTS, *, facts=("Automobiles are parked in the garage overnight.",)):
    """A company whose memories carry vectors of an older 384-dim embedder, one pending
    memory (no vector: the backfill's, not the job's) and org facts without vectors."""
    company = CompanyFactory()
    agent = AgentFactory(company=company)
    Memory.objects.bulk_create(
        [
            MemoryFactory.build(
                agent=agent,
                content=text,
                embedding=old_vector(i),
                embedder_id=OLD,
                embedding_status=Memory.EmbeddingStatus.READY,
            )
            for i, text in enumerate(texts)
        ]
    )
    MemoryFactory(agent=agent, content="Pending memory without a vector.")
    membership = MembershipFactory(company=company, role="admin", user__password=None)
    human = Principal.for_human(membership.user, company, membership.role)
    for content in facts:
        fact_publish(company=company, actor=human, content=content, category="procedure")
    return company, agent


@pytest.fixture
def org_embeddings(settings):
    settings.ORGMEMORY_EMBEDDINGS = False  # facts stored without vectors …
    yield settings
    settings.ORGMEMORY_EMBEDDINGS = True


@pytest.fixture
def server():
    with words_server(768) as running:
        yield running


def embedded_inputs(server) -> list[str]:
    return [text for r in server.requests_to(server.EMBEDDINGS) for text in r.json()["input"]]


def switch(company, server, org_embeddings) -> ReembedJob:
    org_embeddings.ORGMEMORY_EMBEDDINGS = True  # … and embedded by the company's embedder
    use_wide_embedder(company, server)  # commits: the config hook starts the job
    return ReembedJob.objects.get(company=company, status="running")


def vectors_by_embedder(company) -> dict:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT embedder_id, vector_dims(embedding), count(*) FROM memory_memory "
            "WHERE company_id = %s AND embedding IS NOT NULL GROUP BY 1, 2",
            [company.pk],
        )
        return {(e, d): n for e, d, n in cursor.fetchall()}


def api_client(agent):
    from rest_framework.test import APIClient

    from persistence.services.agents import api_key_issue

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_issue(agent=agent).raw_key}")
    return client


def search(agent, text):
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search

    return memory_search(agent=agent, query=MemoryQuery(text=text), include_shared=False)


def test_switching_the_embedder_starts_one_job_with_totals(server, org_embeddings):
    company, _ = seed_company()
    job = switch(company, server, org_embeddings)
    assert (job.status, job.phase) == ("running", "index")
    assert (job.from_embedder_id, job.from_dims) == (OLD, 384)
    assert (job.to_embedder_id, job.to_dims) == ("openai:wide-embed", 768)
    assert (job.memories_total, job.memories_done, job.facts_total, job.facts_done) == (
        7,
        0,
        1,
        0,
    )
    assert job.started_via == "config"
    entry = AuditEntry.objects.get(company=company, action_type="memory.reembed_started")
    assert entry.details["to_dims"] == 768 and entry.details["memories"] == 7
    # Saving the same embedder again does not start another job.
    assert reembed_job_start(company=company).pk == job.pk
    use_wide_embedder(company, server)
    assert ReembedJob.objects.filter(company=company).count() == 1
    # The database allows one running job per company.
    with pytest.raises(IntegrityError), transaction.atomic():
        ReembedJob.objects.create(
            company=company, to_embedder_id="x", to_dims=8,
            created_at=job.created_at, updated_at=job.created_at,
        )  # fmt: skip


def test_an_interrupted_job_resumes_where_it_stopped(server, org_embeddings):
    company, agent = seed_company()
    other, other_agent = seed_company(facts=())  # same old vectors, its own config
    other_before = vectors_by_embedder(other)
    job = switch(company, server, org_embeddings)

    first = reembed_job_run(job=job, batch_size=3, max_batches=2)
    assert (first.batches, first.rows, first.finished) == (2, 6, False)
    job.refresh_from_db()
    assert (job.memories_done, job.memories_total, job.batches, job.phase) == (6, 7, 2, "memories")
    assert job.share_done == round(6 / 8, 4)
    assert vector_index_state("openai:wide-embed", 768) == "ready"
    assert vectors_by_embedder(company) == {(OLD, 384): 1, ("openai:wide-embed", 768): 6}
    done_first = embedded_inputs(server)  # in id order: some 6 of the 7, each once
    assert len(done_first) == len(set(done_first)) == 6 and set(done_first) < set(TEXTS)

    # Search during the job: the new embedder's vectors answer the dense leg, the one row
    # still on the old vector is found by BM25 only (never compared), and it says so.
    result = search(agent, "billing database backed nightly friday deploys")
    assert result.degraded == ["reembedding"]
    assert result.reembedding == {"job": job.pk, "done": 6, "total": 8, "share_done": 0.75}
    old_ids = set(
        Memory.objects.filter(company=company, embedder_id=OLD).values_list("pk", flat=True)
    )
    for hit in result.hits:
        if hit.memory.pk in old_ids:
            assert hit.dense_rank is None and hit.sparse_rank is not None
        else:
            assert hit.dense_rank is not None
    assert {h.memory.content for h in result.hits} >= {TEXTS[0], TEXTS[6]}
    # … and the API payloads carry it (search and context)
    client = api_client(agent)
    progress = {"job": job.pk, "done": 6, "total": 8, "share_done": 0.75}
    body = client.post(
        "/api/v1/memories/search", {"query": "billing database nightly"}, format="json"
    ).json()
    assert (body["degraded"], body["reembedding"]) == (["reembedding"], progress)
    body = client.post(
        "/api/v1/memories/context",
        {"query": "billing database nightly", "token_budget": 400, "include_org": False},
        format="json",
    ).json()
    assert (body["degraded"], body["reembedding"]) == (["reembedding"], progress)
    assert len(body["included"]) >= 2
    # … and the agent tools (REST tool calls; MCP serves the same ToolResult payloads)
    for name, arguments in (
        ("search_memory", {"query": "billing database nightly"}),
        ("search_shared_knowledge", {"query": "billing database nightly"}),
    ):
        body = client.post(
            "/api/v1/memories/tools/call", {"name": name, "arguments": arguments}, format="json"
        ).json()
        assert (body["data"]["degraded"], body["data"]["reembedding"]) == (
            ["reembedding"],
            progress,
        ), name

    server_requests_before = len(server.requests_to(server.EMBEDDINGS))
    second = reembed_job_run(job=job, batch_size=3)
    assert second.finished and second.rows == 2  # the last memory and the fact: no redo
    job.refresh_from_db()
    assert (job.status, job.phase) == ("completed", "done")
    assert (job.memories_done, job.facts_done, job.share_done) == (7, 1, 1.0)
    assert job.completed_at is not None and job.reason == ""
    new_inputs = [
        text
        for r in server.requests_to(server.EMBEDDINGS)[server_requests_before:]
        for text in r.json()["input"]
    ]
    assert sorted(new_inputs) == sorted(
        [t for t in TEXTS if t not in done_first]
        + ["Automobiles are parked in the garage overnight."]
    )
    assert vectors_by_embedder(company) == {("openai:wide-embed", 768): 7}
    assert (
        Memory.objects.get(content="Pending memory without a vector.", company=company).embedding
        is None
    )
    fact_vector = FactVersionEmbedding.objects.get(operation__company=company)
    assert fact_vector.embedder_id == "openai:wide-embed" and len(fact_vector.embedding) == 768
    assert (
        AuditEntry.objects.filter(company=company, action_type="memory.reembed_completed").count()
        == 1
    )

    after = search(agent, "billing database backed nightly")
    assert after.degraded == [] and after.reembedding is None
    body = client.post("/api/v1/memories/search", {"query": "billing"}, format="json").json()
    assert body["degraded"] == [] and "reembedding" not in body
    assert all(hit.dense_rank is not None for hit in after.hits)
    # The other company was never touched.
    assert vectors_by_embedder(other) == other_before == {(OLD, 384): 7}
    assert not ReembedJob.objects.filter(company=other).exists()
    assert search(other_agent, "billing").degraded == []


def test_an_embedder_failure_pauses_the_job_and_loses_nothing(server, org_embeddings):
    company, _ = seed_company()
    job = switch(company, server, org_embeddings)
    server.set_handler(
        server.EMBEDDINGS, lambda request: ScriptedResponse(status=401, json=error_payload("no"))
    )
    paused = reembed_job_run(job=job, batch_size=3)
    assert not paused.finished and paused.error
    job.refresh_from_db()
    assert (job.status, job.memories_done) == ("running", 0)
    assert "failed" in job.reason
    assert vectors_by_embedder(company) == {(OLD, 384): 7}

    server.set_handler(server.EMBEDDINGS, words_handler(768))
    assert reembed_job_run(job=job, batch_size=3).finished
    job.refresh_from_db()
    assert (job.status, job.memories_done, job.reason) == ("completed", 7, "")


def test_switching_again_supersedes_the_running_job(server, org_embeddings):
    company, _ = seed_company()
    first = switch(company, server, org_embeddings)
    reembed_job_run(job=first, batch_size=3, max_batches=1)
    with words_server(1024) as wider:
        use_wide_embedder(company, wider, model="wider-embed")
        first.refresh_from_db()
        assert first.status == "superseded" and first.completed_at is not None
        second = ReembedJob.objects.get(company=company, status="running")
        assert (second.to_embedder_id, second.to_dims) == ("openai:wider-embed", 1024)
        assert second.memories_total == 7  # 3 on the first new embedder, 4 on the old one
        assert reembed_job_run(job=second, batch_size=5).finished
    assert vectors_by_embedder(company) == {("openai:wider-embed", 1024): 7}
    # A run of the superseded job does nothing.
    assert reembed_job_run(job=first).rows == 0


def test_back_to_the_default_embedder_needs_no_index_build(org_embeddings, server):
    company, _ = seed_company(texts=TEXTS[:2], facts=())
    job = switch(company, server, org_embeddings)
    assert reembed_job_run(job=job).finished
    company_config_set(company=company, data={})  # back to the local model
    back = ReembedJob.objects.get(company=company, status="running")
    assert back.to_dims == 384 and back.memories_total == 2 and back.from_dims == 768
    assert reembed_job_run(job=back).finished
    assert set(vectors_by_embedder(company)) == {(back.to_embedder_id, 384)}
    # Nothing left to do: no new job, and a config change that keeps the embedder starts none.
    assert reembed_job_start(company=company) is None
    company_config_set(company=company, data={"memory": {"level": "project"}})
    assert not ReembedJob.objects.filter(company=company, status="running").exists()
    assert ReembedJob.objects.filter(company=company).count() == 2


def test_reembed_command_status_start_resume(server, org_embeddings):
    company, _ = seed_company()
    org_embeddings.ORGMEMORY_EMBEDDINGS = True
    use_wide_embedder(company, server)
    ReembedJob.objects.filter(company=company).delete()  # as if the hook never ran

    out, err = io.StringIO(), io.StringIO()
    call_command("reembed", "status", company.slug, stdout=out)
    assert out.getvalue() == "No re-embedding jobs.\n"

    out = io.StringIO()
    call_command(
        "reembed", "start", company.slug, "--batch-size", "3", "--max-batches", "1",
        stdout=out, stderr=err,
    )  # fmt: skip
    job = ReembedJob.objects.get(company=company)
    assert job.started_via == "command" and job.memories_done == 3
    assert f"job {job.pk}: running — 3/8 rows (1 batches in this run)" in out.getvalue()
    assert "37.5% memories 3/7 facts 0/1" in err.getvalue()

    out, err = io.StringIO(), io.StringIO()
    call_command("reembed", "resume", company.slug, "--batch-size", "3", stdout=out, stderr=err)
    job.refresh_from_db()
    assert job.status == "completed"
    assert f"job {job.pk}: completed — 8/8 rows" in out.getvalue()
    assert "100.0% memories 7/7 facts 1/1" in err.getvalue()

    out = io.StringIO()
    call_command("reembed", "status", company.slug, stdout=out)
    assert f"job {job.pk} {company.slug}: completed {OLD} → openai:wide-embed (768 dims)" in (
        out.getvalue()
    )
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="has no running re-embedding job"):
        call_command("reembed", "resume", company.slug)
    with pytest.raises(CommandError, match=r"No company 'no-such-company'"):
        call_command("reembed", "start", "no-such-company")


def test_a_company_created_with_another_embedder_gets_its_index(server):
    from persistence.services.companies import company_create

    company = company_create(
        name="Wide from the start",
        config={
            "memory": {"embedder": {"model": "born-wide", "dims": 768, "base_url": server.base_url}}
        },
    )
    job = ReembedJob.objects.get(company=company)
    assert (job.status, job.to_embedder_id, job.total) == ("running", "openai:born-wide", 0)
    assert vector_index_state("openai:born-wide", 768) in ("missing", "ready")
    assert reembed_job_run(job=job).finished
    job.refresh_from_db()
    assert (job.status, job.share_done) == ("completed", 1.0)
    assert vector_index_state("openai:born-wide", 768) == "ready"
    # A company created with the default embedder starts nothing.
    assert not ReembedJob.objects.filter(company=company_create(name="Plain")).exists()


def test_the_job_rewrites_every_window_of_a_long_memory(server, org_embeddings):
    """A long memory's later windows (chunk rows) move to the new embedder with its first
    vector, in the same batch; a search then finds it by a phrase past the first window."""
    from memory.core.chunking import memory_windows
    from memory.core.models.memory import MemoryChunk

    filler = " ".join(f"w{i}" for i in range(400))
    long_text = f"{filler} The glacier telescope calibration happens at dawn."
    company, agent = seed_company(facts=())
    long = MemoryFactory(
        agent=agent,
        content=long_text,
        embedding=old_vector(99),
        embedder_id=OLD,
        embedding_status=Memory.EmbeddingStatus.READY,
        chunk_count=1,
    )
    MemoryChunk.objects.create(
        company=company, memory=long, ordinal=1, embedding=old_vector(98), embedder_id=OLD
    )
    windows = memory_windows(long_text, max_windows=32, context_chars=300)
    job = switch(company, server, org_embeddings)
    assert reembed_job_run(job=job).finished
    long.refresh_from_db()
    assert (long.embedder_id, long.chunk_count) == ("openai:wide-embed", len(windows) - 1)
    rows = list(
        MemoryChunk.objects.filter(memory=long)
        .order_by("ordinal")
        .values_list("ordinal", "embedder_id", "embedding")
    )
    assert [(n, e, len(v)) for n, e, v in rows] == [
        (n, "openai:wide-embed", 768) for n in range(1, len(windows))
    ]
    assert set(windows) <= set(embedded_inputs(server))
    hits = search(agent, "glacier telescope calibration").hits
    assert hits[0].memory.pk == long.pk and hits[0].dense_rank == 1


# --- a durable job (issue 34) -----------------------------------------------------------------


def test_a_killed_workers_job_continues_when_its_lease_ends(server, org_embeddings):
    """A worker killed mid-job leaves the job ``working`` under its lease; once the lease
    has passed the resume schedule reclaims it and a company task finishes it from its
    cursor (not after q2's retry of the dead task)."""
    from datetime import timedelta

    from django.utils import timezone

    from memory.core.services.reembed import REEMBED_JOB, REEMBED_LEASE
    from synthorg.jobs.dispatch import jobs_run_company, jobs_run_due

    company, _ = seed_company()
    job = switch(company, server, org_embeddings)
    assert reembed_job_run(job=job, batch_size=3, max_batches=1).rows == 3
    # The next worker claims it, then dies (its process is gone: only the row remains).
    claimed_at = timezone.now()
    ReembedJob.objects.filter(pk=job.pk).update(
        status="working", claimed_until=claimed_at + REEMBED_LEASE, attempts=1
    )
    job.refresh_from_db()
    assert reembed_job_run(job=job).error == "claimed by another worker"
    assert jobs_run_company(REEMBED_JOB, company_id=company.pk, now=claimed_at).retried == 0

    after_lease = claimed_at + REEMBED_LEASE + timedelta(seconds=1)
    summary = jobs_run_due(REEMBED_JOB, now=after_lease)
    assert (summary.reclaimed, summary.retried) == (1, 1)
    job.refresh_from_db()
    assert (job.status, job.memories_done, job.facts_done) == ("completed", 7, 1)
    assert len(embedded_inputs(server)) == len(set(embedded_inputs(server))) == 8  # no redo
    assert list(job.history.order_by("id").values_list("status", flat=True)) == [
        "running",  # started
        "working",  # the first worker
        "running",  # its batch budget spent
        "running",  # reclaimed: the dead worker's lease passed
        "working",
        "completed",
    ]
    assert job.history.order_by("id")[3].reason == (
        "reclaimed: the worker re-embedding this job did not renew its lease (120 s)"
    )


def test_an_embedder_that_keeps_failing_is_retried_then_given_up(server, org_embeddings):
    from memory.core.services.reembed import REEMBED_JOB

    company, _ = seed_company()
    job = switch(company, server, org_embeddings)
    server.set_handler(
        server.EMBEDDINGS, lambda request: ScriptedResponse(status=503, json=error_payload("x"))
    )
    waits = []
    for _ in range(REEMBED_JOB.policy.max_attempts - 1):
        assert reembed_job_run(job=job, batch_size=3).error
        job.refresh_from_db()
        assert job.status == "running" and job.completed_at is None
        waits.append(round((job.next_attempt_at - job.updated_at).total_seconds() / 60))
    assert waits == [1, 2, 4, 8, 16, 32, 60]
    assert reembed_job_run(job=job, batch_size=3).error
    job.refresh_from_db()
    assert (job.status, job.attempts, job.next_attempt_at) == ("failed", 8, None)
    assert job.reason.endswith("(gave up after 8 attempts; an operator can re-queue it)")
    assert reembed_job_run(job=job).error == (
        "the job gave up after its retries: re-queue it on the console's failures page"
    )
    # still the company's current job: search keeps saying it is degraded
    with pytest.raises(IntegrityError), transaction.atomic():
        ReembedJob.objects.create(
            company=company, to_embedder_id="x", to_dims=3, created_at=job.created_at,
            updated_at=job.created_at,
        )  # fmt: skip
    with pytest.raises(Exception, match="append-only"), transaction.atomic():
        job.history.update(reason="rewritten")


def test_superseding_a_job_mid_batch_drops_the_old_workers_batch(server, org_embeddings):
    """The company switches embedder while a worker holds the job: that worker's next batch
    is refused (its lease is gone) and rolled back; the new job takes over."""
    from memory.core.services.reembed import reembed_job_start

    company, _ = seed_company()
    job = switch(company, server, org_embeddings)
    superseded = []

    def switch_meanwhile(current):
        if not superseded:
            use_wide_embedder(company, server, model="wider-embed")
            superseded.append(reembed_job_start(company=company))

    progress = reembed_job_run(job=job, batch_size=3, on_batch=switch_meanwhile)
    job.refresh_from_db()
    assert progress.finished and job.status == "superseded"
    assert job.memories_done == 3  # the batch after the switch was rolled back
    new = ReembedJob.objects.get(company=company, status="running")
    assert new.to_embedder_id == "openai:wider-embed"
