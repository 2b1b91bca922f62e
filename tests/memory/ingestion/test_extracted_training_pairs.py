"""Conversation ingestion gives the fine-tune its "extracted" pairs (a conversation message →
the memory the LLM extracted from it) through the core's extension point."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memory.core.extensions import training_pair_sources
from memory.core.models import Memory
from memory.finetune.selectors import mine_pairs, pair_counts
from memory.ingestion.selectors import extracted_fact_training_pairs
from memory.ingestion.services.extraction import conversation_extract
from persistence.selectors.config import company_config
from persistence.selectors.embedder import company_embedder
from tests.conftest import make_agent_caller
from tests.memory.ingestion.conftest import fact, flush, reply
from tests.persistence.factories import CompanyFactory

BILLING = "Ana said billing deploys move to Fridays at noon."
COFFEE = "Also, the coffee machine on floor 3 is broken again."


def _extract(agent, llm, messages, facts):
    conversation = flush(agent, messages)
    reply(llm, {"facts": [fact(f) for f in facts]})
    run = conversation_extract(conversation=conversation, force=True)
    assert run.status == "succeeded", run.error
    return {m.content: m.pk for m in Memory.objects.filter(agent=agent)}


def test_each_added_fact_pairs_with_the_batch_message_sharing_its_words(caller, llm):
    assert training_pair_sources()["extracted"] is extracted_fact_training_pairs
    memories = _extract(
        caller.agent,
        llm,
        [BILLING, COFFEE, "ok, thanks"],
        [
            "Billing deploys happen on Fridays at noon.",
            "The floor 3 coffee machine is broken.",
            "Zebras are striped.",  # shares no word with any message: no pair
        ],
    )
    other = make_agent_caller(company=CompanyFactory())
    _extract(other.agent, llm, [BILLING], ["Billing deploys happen on Fridays at noon."])
    embedder_id = company_embedder(caller.company).embedder_id

    pairs = list(extracted_fact_training_pairs(caller.company, embedder_id))
    assert pairs == [
        (BILLING, memories["Billing deploys happen on Fridays at noon."]),
        (COFFEE, memories["The floor 3 coffee machine is broken."]),
    ]
    assert pair_counts(caller.company, embedder_id)["extracted"] == 2
    config = company_config(caller.company).memory.fine_tune
    mined = mine_pairs(caller.company, embedder_id, config, max_pairs=100)
    assert mined.counts["extracted"] == 2
    assert BILLING in mined.queries and COFFEE in mined.queries

    # A superseded memory is no positive.
    Memory.objects.filter(pk=memories["The floor 3 coffee machine is broken."]).update(
        superseded_at=timezone.now()
    )
    assert [q for q, _ in extracted_fact_training_pairs(caller.company, embedder_id)] == [BILLING]
    # Nor is an expired one.
    Memory.objects.filter(pk=memories["Billing deploys happen on Fridays at noon."]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert list(extracted_fact_training_pairs(caller.company, embedder_id)) == []
