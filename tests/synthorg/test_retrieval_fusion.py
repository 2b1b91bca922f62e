import pytest

from synthorg.retrieval.fusion import rrf_fuse, rrf_scores


def test_rrf_hand_computed_and_min_max_normalised():
    fused = rrf_fuse([["a", "b", "c"], ["b", "d"]], k=60)
    assert [item for item, _ in fused] == ["b", "a", "d", "c"]
    raw = {"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 62}
    low, high = raw["c"], raw["b"]
    for item, score in fused:
        assert score == pytest.approx((raw[item] - low) / (high - low))
    assert fused[0][1] == 1.0 and fused[-1][1] == 0.0


def test_small_k_amplifies_rank_differences():
    assert rrf_fuse([["a", "b"]], k=1)[1][1] == 0.0
    raw_k1 = {"a": 1 / 2, "b": 1 / 3}
    raw_k60 = {"a": 1 / 61, "b": 1 / 62}
    assert raw_k1["a"] / raw_k1["b"] > raw_k60["a"] / raw_k60["b"]


def test_first_seen_entry_is_kept_and_ties_are_stable():
    first = {"id": 1, "src": "dense"}
    second = {"id": 1, "src": "sparse"}
    other = {"id": 2, "src": "sparse"}
    fused = rrf_fuse([[first], [other, second]], key=lambda e: e["id"], k=60)
    assert fused[0][0] is first
    # x and y tie (rank 1 in one list each): first-seen order wins, all scores equal ⇒ 1.0
    assert rrf_fuse([["x"], ["y"]]) == [("x", 1.0), ("y", 1.0)]


def test_duplicates_within_one_list_count_once_and_limits():
    assert rrf_fuse([["a", "a", "b"]], k=60) == [("a", 1.0), ("b", 0.0)]
    top_two = rrf_fuse([["a", "b", "c"]], max_results=2)
    assert [item for item, _ in top_two] == ["a", "b"]
    assert top_two[1][1] == pytest.approx((1 / 62 - 1 / 63) / (1 / 61 - 1 / 63))
    assert rrf_fuse([]) == []
    with pytest.raises(ValueError):
        rrf_fuse([["a"]], k=0)
    with pytest.raises(ValueError):
        rrf_fuse([["a"]], max_results=0)


def test_rrf_scores_are_the_raw_sums_in_first_seen_order():
    assert rrf_scores([["a", "b"], ["b", "c"]], k=10) == {
        "a": 1 / 11,
        "b": 1 / 12 + 1 / 11,
        "c": 1 / 12,
    }
    assert list(rrf_scores([["b"], ["a", "b"]], k=1)) == ["b", "a"]
