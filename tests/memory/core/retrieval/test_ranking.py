import math
from datetime import UTC, datetime, timedelta

import pytest

from memory.core.retrieval.ranking import Candidate, combined_score, rank_linear, recency_score

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def linear(candidates, **overrides):
    params = dict(
        now=NOW,
        relevance_weight=0.7,
        recency_weight=0.3,
        decay_rate=0.01,
        personal_boost=0.1,
        default_relevance=0.5,
        min_relevance=0.0,
        max_results=20,
    )
    params.update(overrides)
    return rank_linear(candidates, **params)


def test_recency_is_exponential_decay_per_hour():
    assert recency_score(NOW - timedelta(hours=10), NOW, 0.01) == pytest.approx(math.exp(-0.1))
    assert recency_score(NOW, NOW, 0.01) == 1.0
    assert recency_score(NOW + timedelta(hours=5), NOW, 0.01) == 1.0  # future clamps


def test_combined_is_weighted_and_clamped():
    assert combined_score(0.5, 1.0, relevance_weight=0.7, recency_weight=0.3) == pytest.approx(0.65)
    assert combined_score(1.0, 1.0, relevance_weight=0.7, recency_weight=0.30001) == 1.0


def test_personal_boost_and_recency_hand_computed():
    personal = Candidate("p", 0.6, NOW - timedelta(hours=10), is_shared=False)
    shared = Candidate("s", 0.6, NOW - timedelta(hours=10), is_shared=True)
    ranked = linear([shared, personal])
    assert [s.key for s in ranked] == ["p", "s"]
    assert ranked[0].relevance == pytest.approx(0.7)
    assert ranked[0].recency == pytest.approx(math.exp(-0.1))
    assert ranked[0].combined == pytest.approx(0.7 * 0.7 + 0.3 * math.exp(-0.1))
    assert ranked[1].combined == pytest.approx(0.7 * 0.6 + 0.3 * math.exp(-0.1))


def test_boost_caps_at_one_and_missing_relevance_uses_default():
    ranked = linear(
        [Candidate("a", 0.95, NOW), Candidate("b", None, NOW, is_shared=True)],
    )
    assert ranked[0].relevance == 1.0
    assert ranked[1].relevance == 0.5
    assert ranked[1].combined == pytest.approx(0.7 * 0.5 + 0.3)


def test_min_relevance_filters_and_max_results_truncates():
    old = NOW - timedelta(hours=1000)
    candidates = [
        Candidate("low", 0.0, old, is_shared=True),  # 0.3·e^-10 ≈ 0.0000136
        Candidate("mid", 0.5, NOW, is_shared=True),  # 0.65
        Candidate("high", 0.9, NOW, is_shared=True),  # 0.93
    ]
    assert [s.key for s in linear(candidates, min_relevance=0.3)] == ["high", "mid"]
    assert [s.key for s in linear(candidates, max_results=1)] == ["high"]
    with pytest.raises(ValueError):
        linear(candidates, max_results=0)


def test_ties_keep_input_order():
    candidates = [Candidate(k, 0.5, NOW, is_shared=True) for k in "cab"]
    assert [s.key for s in linear(candidates)] == ["c", "a", "b"]
