"""Pruning strategies (pure): TTL, the Pareto frontier, hybrid — hand-computed cases."""

from datetime import UTC, datetime, timedelta

import pytest

from memory.procedural.config import ProceduralPruningConfig
from memory.procedural.pruning import (
    PruneCandidate,
    decide_pruning,
    pareto_excess,
    pareto_frontiers,
)

NOW = datetime(2026, 11, 23, tzinfo=UTC)


def c(name, days_ago, confidence=0.5, applied=0, applied_days_ago=None):
    return PruneCandidate(
        id=name,
        created_at=NOW - timedelta(days=days_ago),
        confidence=confidence,
        application_count=applied,
        last_applied_at=None
        if applied_days_ago is None
        else NOW - timedelta(days=applied_days_ago),
    )


def test_ttl_uses_last_use():
    entries = [c("old", 91), c("edge", 90), c("new", 1), c("old-but-used", 200, applied_days_ago=3)]
    decision = decide_pruning(entries, config=ProceduralPruningConfig(strategy="ttl"), now=NOW)
    assert decision.ttl == ("old",) and decision.pareto == ()


def test_ttl_custom_age():
    entries = [c("a", 8), c("b", 6)]
    config = ProceduralPruningConfig(strategy="ttl", max_age_days=7)
    assert decide_pruning(entries, config=config, now=NOW).pruned == ("a",)


def test_pareto_frontiers_hand_computed():
    # (relevance, recency): A(0.9, old) B(0.5, new) C(0.4, mid) D(0.95, oldest) E(0.3, oldest)
    a, b, cc, d, e = (
        c("A", 10, 0.9),
        c("B", 1, 0.5),
        c("C", 5, 0.4),
        c("D", 20, 0.95),
        c("E", 20, 0.3),
    )
    layers = [[x.id for x in layer] for layer in pareto_frontiers([a, b, cc, d, e])]
    # A is beaten by nobody (D is more relevant but older); C is beaten by B; E by D and A.
    assert layers == [["A", "B", "D"], ["C"], ["E"]]


def test_applications_raise_relevance():
    used = c("used", 10, 0.5, applied=10)  # 0.5 × (1 + ln 11) ≈ 1.70
    fresh = c("fresh", 1, 0.9)
    stale = c("stale", 10, 0.9)
    assert [x.id for x in pareto_frontiers([used, fresh, stale])[0]] == ["used", "fresh"]


def test_pareto_keeps_whole_frontiers_then_cuts():
    entries = [c("A", 10, 0.9), c("B", 1, 0.5), c("C", 5, 0.4), c("D", 20, 0.95), c("E", 20, 0.3)]
    assert [x.id for x in pareto_excess(entries, max_entries=4)] == ["E"]
    assert [x.id for x in pareto_excess(entries, max_entries=3)] == ["C", "E"]
    assert pareto_excess(entries, max_entries=5) == []


def test_first_frontier_over_the_cap_keeps_its_newest():
    # a trade-off chain: every entry is on the first frontier
    chain = [c(f"n{i}", days_ago=i, confidence=0.1 * i) for i in range(1, 6)]
    assert len(pareto_frontiers(chain)) == 1
    pruned = [x.id for x in pareto_excess(chain, max_entries=2)]
    assert pruned == ["n3", "n4", "n5"]  # n1 and n2 are the newest


def test_hybrid_ttl_then_pareto():
    entries = [c("ancient", 400, 1.0), c("A", 10, 0.9), c("B", 1, 0.5), c("C", 5, 0.4)]
    config = ProceduralPruningConfig(strategy="hybrid", max_entries=2)
    decision = decide_pruning(entries, config=config, now=NOW)
    assert decision.ttl == ("ancient",) and decision.pareto == ("C",)


def test_none_and_pareto_only():
    entries = [c("ancient", 400, 1.0), c("A", 10, 0.9)]
    assert (
        decide_pruning(entries, config=ProceduralPruningConfig(strategy="none"), now=NOW).pruned
        == ()
    )
    pareto = ProceduralPruningConfig(strategy="pareto", max_entries=5)
    assert decide_pruning(entries, config=pareto, now=NOW).pruned == ()


def test_equal_timestamps_normalise_to_one():
    same = [c("x", 3, 0.2), c("y", 3, 0.8)]
    assert [x.id for x in pareto_excess(same, max_entries=1)] == ["x"]


def test_unknown_strategy():
    class Bad:
        strategy = "random"

    with pytest.raises(ValueError):
        decide_pruning([], config=Bad(), now=NOW)
