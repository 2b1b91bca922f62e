import pytest

from memory.retrieval.packing import estimate_tokens, pack_greedy


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
