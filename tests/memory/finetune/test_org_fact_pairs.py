"""Org fact versions as fine-tune pairs: an earlier wording of a live fact → its current
version, whose vector (``FactVersionEmbedding``, the company's embedder) joins the document
pool in one group of its own, the company's facts."""

from __future__ import annotations

import numpy as np
import pytest

from memory.finetune.query_adapter import normalize_rows
from memory.finetune.selectors import ORG_FACT_GROUP, mine_pairs, pair_counts
from orgmemory.models import FactVersionEmbedding
from orgmemory.services.facts import fact_publish, fact_retract
from persistence.principal import Principal
from persistence.selectors.config import company_config
from synthorg.embedding.minilm_onnx import MINILM_EMBEDDER_ID
from tests.memory.finetune.data import crafted, store_pairs
from tests.persistence.factories import CompanyFactory, MembershipFactory

SECRET = "sk-abcdef0123456789abcdef"


def _human(company) -> Principal:
    membership = MembershipFactory(company=company, role="admin", user__password=None)
    return Principal.for_human(membership.user, company, membership.role)


def _fact(company, texts, vector=None, *, vector_of=-1, embedder_id=MINILM_EMBEDDER_ID):
    """Publish ``texts`` as the versions of one fact; ``vector`` on version ``vector_of``."""
    human = _human(company)
    entries = [fact_publish(company=company, actor=human, content=texts[0], category="convention")]
    for text in texts[1:]:
        entries.append(
            fact_publish(
                company=company,
                actor=human,
                content=text,
                category="convention",
                fact_id=entries[0].fact_id,
                tags=["v"],
            )
        )
    if vector is not None:
        FactVersionEmbedding.objects.create(
            operation=entries[vector_of], embedder_id=embedder_id,
            embedding=[float(x) for x in vector],
        )  # fmt: skip
    return entries


@pytest.fixture(autouse=True)
def _crafted_vectors_only(settings):
    settings.ORGMEMORY_EMBEDDINGS = False  # the test writes the facts' vectors itself


def test_earlier_wordings_of_live_facts_are_pairs_ranked_among_the_companys_facts(caller):
    company = caller.company
    vectors = crafted(7)[0]
    # v1 and v2 are one wording (whitespace): one pair.
    car = _fact(
        company,
        ["Cars go in the garage", "Cars go in the garage ", "Automobiles stay in the garage"],
        vectors[0],
    )
    invoices = _fact(company, [f"Invoices: 30 days, token={SECRET}", "Pay invoices in 30 days"],
                     vectors[1])  # fmt: skip
    lunch = _fact(company, ["Lunch at noon"], vectors[2])  # no earlier version: a document only
    standup = _fact(
        company, ["Standup at 9", "Standup at 9"], vectors[3]
    )  # only tags changed: no pair
    gone = _fact(company, ["Old rule", "Old rule, reworded"], vectors[4])
    fact_retract(company=company, actor=_human(company), fact_id=gone[0].fact_id)
    _fact(company, ["Badge at the door", "Badges at every door"], vectors[5],
          embedder_id="another-embedder")  # fmt: skip
    _fact(company, ["Wiki is on Confluence", "Wiki is on Notion"], vectors[6], vector_of=0)
    _fact(CompanyFactory(), ["Theirs", "Theirs, v2"], vectors[0])
    memories = store_pairs(caller.agent, crafted(2, seed=9)[0])

    counts = {"turn": 2, "lesson": 0, "extracted": 0, "org_fact": 2, "labelled": 0}
    assert pair_counts(company, MINILM_EMBEDDER_ID) == counts
    config = company_config(company).memory.fine_tune
    pairs = mine_pairs(company, MINILM_EMBEDDER_ID, config, max_pairs=100)
    assert pairs.counts == {**counts, "synthetic": 0}
    assert pairs.skipped == {}
    org = {
        pairs.doc_ids[p]: q
        for q, p in zip(pairs.queries, pairs.positives, strict=True)
        if pairs.doc_groups[p] == ORG_FACT_GROUP
    }
    assert org == {
        car[-1].operation_id: "Cars go in the garage",
        invoices[-1].operation_id: "Invoices: 30 days, token=[REDACTED:sk_key]",
    }
    assert SECRET not in " ".join(pairs.queries) and sum(pairs.redactions.values()) == 1
    # The pool: the agent's memories, then every live fact with a base vector, one group.
    assert set(pairs.doc_ids[:2]) == {m.pk for m in memories}
    assert list(pairs.doc_groups[:2]) == [caller.agent.pk] * 2
    facts = {car[-1], invoices[-1], lunch[-1], standup[-1]}
    assert set(pairs.doc_ids[2:]) == {f.operation_id for f in facts} and len(pairs.doc_ids) == 6
    assert list(pairs.doc_groups[2:]) == [ORG_FACT_GROUP] * 4
    at = pairs.doc_ids.index(invoices[-1].operation_id)
    np.testing.assert_allclose(pairs.docs[at], normalize_rows(vectors[1:2])[0], atol=1e-6)


def test_without_fact_pairs_the_pool_holds_no_facts(caller):
    _fact(caller.company, ["Lunch at noon"], crafted(1)[0][0])
    store_pairs(caller.agent, crafted(2, seed=9)[0])
    config = company_config(caller.company).memory.fine_tune
    pairs = mine_pairs(caller.company, MINILM_EMBEDDER_ID, config, max_pairs=100)
    assert pairs.counts["org_fact"] == 0
    assert len(pairs.doc_ids) == 2 and ORG_FACT_GROUP not in pairs.doc_groups
