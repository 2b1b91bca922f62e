"""The speaker feature end to end: a question about a speaker ranks their turns higher."""

import pytest

from tests.memory.core.selectors.search.helpers import contents, search, store
from tests.persistence.factories import AgentFactory, CompanyFactory

pytestmark = pytest.mark.django_db

# query "… deploy": dense (deploy axis) and sparse agree: "deploy deploy" rank 1,
# "deploy friday" rank 2; "lunch menu database" is dense rank 3 only (rrf_k 10)
RAW = [2 / 11, 2 / 12, 1 / 13]
NORMALISED = [(r - RAW[2]) / (RAW[0] - RAW[2]) for r in RAW]


def agent_with(**retrieval):
    return AgentFactory(company=CompanyFactory(config={"memory": {"retrieval": retrieval}}))


def conversation(agent, embedder, second_speaker="user"):
    # the tags memory.core.retrieval.speakers.speaker_tag makes (spelled out: the ranking,
    # not an import, is what fails on code without the feature)
    store(agent, embedder, "deploy deploy", tags=("speaker:assistant",))
    store(agent, embedder, "deploy friday", tags=(f"speaker:{second_speaker.lower()}",))
    store(agent, embedder, "lunch menu database", tags=("speaker:assistant",))


def test_a_first_person_question_ranks_the_users_own_turns_higher(keyword_embedder):
    agent = agent_with()  # the product default: speaker_boost 0.5
    conversation(agent, keyword_embedder)
    result = search(agent, keyword_embedder, "when did I deploy", limit=3)
    assert contents(result) == ["deploy friday", "deploy deploy", "lunch menu database"]
    boosted = NORMALISED[1] + 0.5
    assert [h.combined for h in result.hits] == pytest.approx([1.0, 1.0 / boosted, 0.0])
    assert [(h.dense_rank, h.sparse_rank) for h in result.hits] == [(2, 2), (1, 1), (3, None)]


def test_a_question_naming_a_speaker_ranks_their_turns_higher(keyword_embedder):
    agent = agent_with()
    conversation(agent, keyword_embedder, second_speaker="Caroline")
    named = search(agent, keyword_embedder, "when did Caroline deploy", limit=3)
    assert contents(named) == ["deploy friday", "deploy deploy", "lunch menu database"]
    unnamed = search(agent, keyword_embedder, "when did Melanie deploy", limit=3)
    assert contents(unnamed) == ["deploy deploy", "deploy friday", "lunch menu database"]
    assert [h.combined for h in unnamed.hits] == pytest.approx(NORMALISED)


def test_speaker_boost_zero_turns_it_off(keyword_embedder):
    agent = agent_with(speaker_boost=0)
    conversation(agent, keyword_embedder)
    result = search(agent, keyword_embedder, "when did I deploy", limit=3)
    assert contents(result) == ["deploy deploy", "deploy friday", "lunch menu database"]
    assert [h.combined for h in result.hits] == pytest.approx(NORMALISED)
