"""Relevance ranking of org facts (BM25 + embeddings), the prompt context, backfill."""

from datetime import timedelta

import pytest

from orgmemory.domain import OrgMemoryQuery
from orgmemory.selectors import (
    org_prompt_context,
    query_facts,
)
from orgmemory.services.facts import fact_publish, fact_retract
from persistence.services.companies import company_config_set

pytestmark = pytest.mark.django_db

TINY = timedelta(microseconds=1)


def _publish(company, human, content, category="procedure", **kwargs):
    return fact_publish(company=company, actor=human, content=content, category=category, **kwargs)


def test_bm25_ranks_by_relevance_and_respects_categories_and_limit(company, human):
    deploy = _publish(company, human, "Deployments go through the blue green deploy pipeline")
    _publish(company, human, "Lunch is served at noon on Fridays", category="convention")
    rollback = _publish(company, human, "Rollback a failed deploy with the rollback script")
    _publish(company, human, "Deploy only on weekdays", category="core_policy")

    found = query_facts(company=company, query=OrgMemoryQuery(context="how do I deploy?"))
    assert [f.fact_id for f in found] == [deploy.fact_id, rollback.fact_id]
    assert found[0].score == 1.0
    assert found[0].score > found[1].score > 0

    only_conventions = query_facts(
        company=company,
        query=OrgMemoryQuery(context="deploy lunch", categories=frozenset({"convention"})),
    )
    assert [f.content for f in only_conventions] == ["Lunch is served at noon on Fridays"]

    assert len(query_facts(company=company, query=OrgMemoryQuery(context="deploy", limit=1))) == 1
    company_config_set(
        company=company, data={"org_memory": {"extended_store": {"max_retrieved_per_query": 1}}}
    )
    company.refresh_from_db()
    assert len(query_facts(company=company, query=OrgMemoryQuery(context="deploy", limit=50))) == 1


def test_query_without_context_returns_most_recent(company, human):
    older = _publish(company, human, "older")
    newer = _publish(company, human, "newer")
    found = query_facts(company=company, query=OrgMemoryQuery())
    assert [(f.fact_id, f.score) for f in found] == [(newer.fact_id, None), (older.fact_id, None)]


def test_org_prompt_context(company, human):
    company_config_set(company=company, data={"org_memory": {"core_policies": ["Be kind"]}})
    company.refresh_from_db()
    _publish(company, human, "Never deploy on Fridays", category="core_policy")
    deploy = _publish(company, human, "Deploy with the release train", category="procedure")
    _publish(company, human, "Unrelated lunch convention", category="convention")
    context = org_prompt_context(company=company, context="deploy release")
    assert context.core_policies == ["Be kind", "Never deploy on Fridays"]
    assert [(f.fact_id, f.category, f.content) for f in context.facts] == [
        (str(deploy.fact_id), "procedure", "Deploy with the release train")
    ]
    assert context.facts[0].score == 1.0
    empty = org_prompt_context(company=company, context="   ")
    assert (empty.core_policies, empty.facts) == (["Be kind", "Never deploy on Fridays"], [])
    assert (
        org_prompt_context(company=company, context="deploy", as_of=deploy.timestamp - TINY).facts
        == []
    )


def test_embeddings_find_paraphrases_bm25_misses(company, human, with_embeddings):
    # No shared lexeme with the query: only the dense leg can find it.
    target = _publish(company, human, "Automobiles must be parked in the garage overnight")
    _publish(company, human, "Invoices are paid within thirty days", category="convention")
    found = query_facts(
        company=company, query=OrgMemoryQuery(context="where do I leave my car at night?")
    )
    assert [f.fact_id for f in found] == [target.fact_id]
    assert found[0].score == 0.5  # first on one of two legs


def test_backfill_embeds_live_versions_written_without_an_embedder(company, human, settings):
    from orgmemory.models import FactVersionEmbedding
    from orgmemory.services.embeddings import fact_embeddings_backfill

    old = _publish(company, human, "Cars are parked in the garage")
    live = _publish(company, human, "Automobiles stay in the garage overnight", fact_id=old.fact_id)
    gone = _publish(company, human, "Retracted rule")
    fact_retract(company=company, actor=human, fact_id=gone.fact_id)
    assert fact_embeddings_backfill() == 0  # embeddings off: nothing to do
    settings.ORGMEMORY_EMBEDDINGS = True
    assert fact_embeddings_backfill() == 1
    assert list(FactVersionEmbedding.objects.values_list("operation_id", flat=True)) == [
        live.operation_id
    ]
    assert fact_embeddings_backfill() == 0
    found = query_facts(company=company, query=OrgMemoryQuery(context="where is my car at night"))
    assert [f.version for f in found] == [2]


def test_backfill_replaces_vectors_of_another_model(company, human, settings):
    from orgmemory.models import FactVersionEmbedding
    from orgmemory.services.embeddings import fact_embeddings_backfill
    from synthorg.embedding import MINILM_EMBEDDER_ID

    fact = _publish(company, human, "Cars are parked in the garage")
    FactVersionEmbedding.objects.create(
        operation_id=fact.operation_id,
        embedder_id="all-MiniLM-L6-v2-onnx-int8",
        embedding=[0.5] * 384,
    )
    settings.ORGMEMORY_EMBEDDINGS = True
    assert fact_embeddings_backfill() == 1
    row = FactVersionEmbedding.objects.get(operation_id=fact.operation_id)
    assert row.embedder_id == MINILM_EMBEDDER_ID and list(row.embedding[:2]) != [0.5, 0.5]
    assert fact_embeddings_backfill() == 0


FILLER = " ".join(
    f"Section {n}: quarterly invoices are reconciled by the finance team against the ledger, "
    "and every discrepancy above five hundred euros is escalated to the controller."
    for n in range(1, 16)
)  # ≈ 2,500 characters, no lexeme in common with the query below
PARKING = (
    "Parking: automobiles must be parked in the garage overnight. Vehicles standing outside "
    "after dark are towed by the city. Garage spots are assigned by facilities every evening, "
    "and visitors park their automobiles on level two."
)


@pytest.mark.parametrize(("max_chunks", "found_first"), [(32, True), (1, False)])
def test_a_long_fact_is_found_by_a_passage_past_the_first_window(
    company, human, with_embeddings, max_chunks, found_first
):
    """Windows past the embedder's first are vectors too (FactVersionChunk): the dense leg
    finds a paraphrase at the end of a long ADR. With one window (max_chunks 1: what the
    dense leg saw before) the passage is invisible to it."""
    from orgmemory.models import FactVersionChunk

    company_config_set(company=company, data={"memory": {"chunking": {"max_chunks": max_chunks}}})
    company.refresh_from_db()
    adr = _publish(
        company, human, f"{FILLER} {PARKING}", category="adr",
    )  # fmt: skip
    _publish(company, human, "Lunch is served at noon on Fridays", category="convention")
    chunks = FactVersionChunk.objects.filter(operation_id=adr.operation_id)
    assert chunks.count() == (0 if max_chunks == 1 else 3)
    found = query_facts(
        company=company, query=OrgMemoryQuery(context="where do I leave my car at night?")
    )
    assert (bool(found) and found[0].fact_id == adr.fact_id) is found_first


def test_backfill_writes_the_windows_of_a_long_fact(company, human, settings):
    from orgmemory.models import FactVersionChunk, FactVersionEmbedding
    from orgmemory.services.embeddings import fact_embeddings_backfill

    adr = _publish(company, human, f"{FILLER} {PARKING}", category="adr")
    assert not FactVersionChunk.objects.exists()  # embeddings off at publish time
    settings.ORGMEMORY_EMBEDDINGS = True
    assert fact_embeddings_backfill() == 1
    assert FactVersionEmbedding.objects.filter(operation_id=adr.operation_id).exists()
    ordinals = FactVersionChunk.objects.filter(operation_id=adr.operation_id).values_list(
        "ordinal", flat=True
    )
    assert sorted(ordinals) == [1, 2, 3]
    # a second store (an embedder change, the re-embedding job) replaces, never adds
    from orgmemory.embedding import fact_window_vectors, org_embedder
    from orgmemory.models import OperationLogEntry
    from orgmemory.services.embeddings import fact_vectors_store

    entry = OperationLogEntry.objects.get(operation_id=adr.operation_id)
    embedder = org_embedder(company)
    vectors = fact_window_vectors(embedder, company, [entry.content])
    fact_vectors_store(entries=[entry], embedder_id=embedder.embedder_id, vectors=vectors)
    assert FactVersionChunk.objects.filter(operation_id=adr.operation_id).count() == 3


def test_the_chunk_count_says_which_versions_have_later_windows(company, human, with_embeddings):
    from orgmemory.models import FactVersionEmbedding

    short = _publish(company, human, "Cars stay in the garage.")
    long = _publish(company, human, f"{FILLER} {PARKING}", category="adr")
    counts = dict(FactVersionEmbedding.objects.values_list("operation_id", "chunk_count"))
    assert counts == {short.operation_id: 0, long.operation_id: 3}


@pytest.mark.django_db(transaction=True)
def test_org_facts_rank_with_the_companys_active_query_adapter(
    company, human, with_embeddings, tmp_path, settings
):
    """The memory search's adapter ranks facts too (orgmemory.query_vectors): an adapter
    that maps the query onto another fact's vector moves that fact first; with fine-tuning
    disabled, or the adapter's file gone, the base vector ranks again."""
    import hashlib

    import numpy as np
    from django.utils import timezone

    from memory.finetune.models import AdapterCheckpoint
    from memory.finetune.query_adapter import matrix_to_bytes
    from memory.finetune.selectors import checkpoint_file
    from orgmemory.embedding import embed_fact, embed_query_text
    from persistence.services.companies import company_config_set
    from synthorg.embedding import MINILM_EMBEDDER_ID
    from tests.memory.finetune.data import enable

    query = "where do I leave my car at night?"
    garage = _publish(company, human, "Automobiles must be parked in the garage overnight")
    invoices = _publish(company, human, "Invoices are paid within thirty days")

    def first():
        return query_facts(company=company, query=OrgMemoryQuery(context=query))[0].fact_id

    assert first() == garage.fact_id
    enable(company, tmp_path, settings)
    company.refresh_from_db()
    _id, q = embed_query_text(query, company=company)
    _id, (b,) = embed_fact(invoices.content, company=company)
    matrix = np.outer(b, q).astype(np.float32)  # W q = b: the query becomes the invoices fact
    data = matrix_to_bytes(matrix)
    checkpoint = AdapterCheckpoint(
        company=company, embedder_id=MINILM_EMBEDDER_ID, dims=384, directory="adapters",
        file_name="forced.npy", sha256=hashlib.sha256(data).hexdigest(), is_active=True,
        created_at=timezone.now(), activated_at=timezone.now(),
    )  # fmt: skip
    path = checkpoint_file(company.pk, checkpoint)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    checkpoint.save()

    assert first() == invoices.fact_id
    company_config_set(company=company, data={"memory": {"fine_tune": {"enabled": False}}})
    company.refresh_from_db()
    assert first() == garage.fact_id
