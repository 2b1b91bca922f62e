import pytest

from memory.core.retrieval.packing import estimate_tokens, pack_greedy, pack_greedy_with_fallback


def test_estimate():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("a" * 41) == 10


def test_greedy_skips_what_does_not_fit_and_continues():
    items = [("a", 6), ("b", 5), ("c", 3), ("d", 1)]
    included, dropped, used = pack_greedy(items, cost=lambda i: i[1], budget=10)
    assert [i for i, _ in included] == ["a", "c", "d"]
    assert [i for i, _ in dropped] == ["b"]
    assert used == 10


def test_zero_budget_and_negative_cost():
    assert pack_greedy([("a", 1)], cost=lambda i: i[1], budget=0) == ([], [("a", 1)], 0)
    assert pack_greedy([("a", 0)], cost=lambda i: i[1], budget=0) == ([("a", 0)], [], 0)
    with pytest.raises(ValueError):
        pack_greedy([("a", -1)], cost=lambda i: i[1], budget=5)


def test_pack_with_fallback_takes_the_short_form_when_the_long_one_does_not_fit():
    long_forms = {"a": "a-short", "c": "c-short"}
    costs = {"a": 8, "a-short": 3, "b": 4, "c": 6, "c-short": 5}
    included, dropped, used = pack_greedy_with_fallback(
        ["a", "b", "c"], cost=costs.__getitem__, budget=10, fallback=long_forms.get
    )
    # a (8) fits whole; b (4) does not and has no fallback; c (6) does not, c-short (5) neither
    assert (included, dropped, used) == (["a"], ["b", "c"], 8)
    included, dropped, used = pack_greedy_with_fallback(
        ["b", "a", "c"], cost=costs.__getitem__, budget=10, fallback=long_forms.get
    )
    # b 4; a 8 > 6 left → a-short 3; c 6 > 3 left, c-short 5 > 3 → dropped
    assert (included, dropped, used) == (["b", "a-short"], ["c"], 7)
