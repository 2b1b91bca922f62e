"""The pure write-gate functions: Dice overlap, the sound candidate probe, tie-breaking."""

import random

import pytest

from memory.core.write_gate import (
    DUPLICATE_THRESHOLD,
    Candidate,
    best_duplicate,
    dice,
    probe_terms,
)


def test_dice():
    assert dice({"a", "b"}, {"a", "b"}) == 1.0
    assert dice({"a", "b", "c", "d"}, {"a", "b", "c", "e"}) == 0.75
    assert dice({"a"}, {"b"}) == 0.0
    assert dice(set(), set()) == 0.0


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 8, 13, 40])
def test_probe_is_sound(size):
    """Every set within the threshold shares at least one probe term (exhaustive-ish)."""
    rng = random.Random(size)
    terms = {f"t{i}" for i in range(size)}
    probe = set(probe_terms(terms))
    assert probe and probe <= terms
    for _ in range(2000):
        keep = rng.sample(sorted(terms), rng.randint(0, size))
        extra = {f"x{i}" for i in range(rng.randint(0, size))}
        other = set(keep) | extra
        if dice(terms, other) >= DUPLICATE_THRESHOLD:
            assert probe & other, (terms, other, probe)


def test_probe_is_small_for_long_texts():
    terms = {f"term{i}" for i in range(30)}
    assert len(probe_terms(terms)) == 11  # 30 - ceil(20) + 1
    assert probe_terms(set()) == []


def test_best_duplicate_picks_most_similar_then_oldest():
    terms = {"a", "b", "c", "d", "e"}
    candidates = [
        Candidate(key="newer-exact", terms=frozenset(terms), order=(2,)),
        Candidate(key="older-exact", terms=frozenset(terms), order=(1,)),
        Candidate(key="close", terms=frozenset({"a", "b", "c", "d"}), order=(0,)),
        Candidate(key="far", terms=frozenset({"a", "z"}), order=(0,)),
    ]
    assert best_duplicate(terms, candidates) == "older-exact"
    assert best_duplicate(terms, candidates[2:]) == "close"  # 8/9 ≥ 0.8
    assert best_duplicate(terms, candidates[3:]) is None
    assert best_duplicate(set(), candidates) is None


def test_threshold_boundary_is_inclusive():
    a = {"a", "b", "c", "d", "e"}
    b = {"a", "b", "c", "d", "f"}  # 8/10 = 0.8 exactly
    assert best_duplicate(a, [Candidate(key=1, terms=frozenset(b), order=())]) == 1


def test_probe_prefers_the_rarest_terms_and_stays_sound():
    terms = {"caroline", "may", "2023", "painting", "lake"}
    frequency = {"caroline": 300, "may": 300, "2023": 300, "painting": 2, "lake": 1}
    probe = probe_terms(terms, frequency=frequency)
    assert probe == ["lake", "painting"]  # 5 - ceil(4) + 1 = 2 terms, the rarest first
    assert len(probe) == len(probe_terms(terms))
