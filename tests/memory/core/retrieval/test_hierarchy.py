"""The hierarchical retriever's deterministic rules (memory.core.retrieval.hierarchy)."""

import pytest

from memory.core.retrieval.hierarchy import (
    corrections,
    judge_by_score,
    merge_ranked,
    route_by_hints,
    worker_categories,
)
from synthorg.enums import MemoryCategory as C


@pytest.mark.parametrize(
    ("text", "categories", "max_workers", "expected"),
    [
        ("how do I deploy billing?", (), 3, ["procedural", "semantic", "episodic"]),
        ("how do I deploy billing?", (), 1, ["procedural"]),
        ("when did we meet Maria yesterday?", (), 2, ["episodic", "semantic"]),
        ("billing owner", (), 3, ["semantic", "episodic", "procedural"]),
        ("billing owner", (), 1, ["semantic"]),
        # the request's categories decide which workers may run at all
        ("how do I deploy billing?", (C.EPISODIC,), 3, ["episodic"]),
        ("anything", (C.SOCIAL, C.WORKING), 3, ["semantic", "episodic"]),
        ("anything", (C.SOCIAL, C.WORKING), 1, ["semantic"]),
    ],
)
def test_route_by_hints(text, categories, max_workers, expected):
    assert route_by_hints(text, categories=categories, max_workers=max_workers) == expected


def test_route_needs_a_worker():
    with pytest.raises(ValueError, match="max_workers"):
        route_by_hints("x", max_workers=0)


def test_worker_categories_narrowed_to_the_request():
    assert worker_categories("semantic") == (C.SEMANTIC, C.SOCIAL)
    assert worker_categories("episodic", (C.WORKING, C.PROCEDURAL)) == (C.WORKING,)


@pytest.mark.parametrize(
    ("similarities", "good"),
    [([], False), ([0.2, None], False), ([0.34, 0.1], False), ([0.35], True), ([None], True)],
)
def test_judge_by_score(similarities, good):
    assert judge_by_score(similarities) is good


def test_corrections_content_words_then_longest_words():
    assert corrections("When did Caroline go to the LGBTQ support group?") == [
        "Caroline go LGBTQ support group",
        "Caroline",
        "support",
        "LGBTQ",
        "group",
        "go",
    ]
    # a query of content words only is not "corrected" into itself
    assert corrections("zebra quantum") == ["quantum", "zebra"]
    assert corrections("what is it?") == []


def test_merge_ranked_is_rrf_over_every_list():
    # k=1: a = 1/2 + 1/3, b = 1/3, c = 1/2 → a, c, b
    assert [key for key, _ in merge_ranked([["a", "b"], ["c", "a"], []], k=1)] == ["a", "c", "b"]
