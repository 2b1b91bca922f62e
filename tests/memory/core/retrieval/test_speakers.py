"""The speaker feature's matching and scoring (hand-computed)."""

import pytest

from memory.core.retrieval.speakers import (
    boost_speakers,
    named_speakers,
    speaker_tag,
    speakers_of,
)


def test_speaker_tag_is_lower_case_collapsed_and_fits_a_tag():
    assert speaker_tag("  Mary   Ann ") == "speaker:mary ann"
    assert speaker_tag("x" * 100) == "speaker:" + "x" * 56
    assert speakers_of(["verbatim", "speaker:user", "speaker:ana"]) == {"user", "ana"}


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("When did Caroline go camping?", {"caroline"}),
        ("what was caroline's job?", {"caroline"}),  # case-insensitive, possessive
        ("When did Carol go camping?", set()),  # a name is matched as whole words
        ("How many runs did I miss?", {"user"}),
        ("What is my commute?", {"user"}),
        ("I remember you told me about tea tree oil", {"user", "assistant"}),
        ("What did the team decide?", set()),
        ("What did Mary Ann say?", {"mary ann"}),
    ],
)
def test_named_speakers(query, named):
    names = {"caroline", "carolina", "user", "assistant", "mary ann"}
    assert named_speakers(query, names) == named


def test_the_named_speakers_turns_gain_weight_times_the_best_score():
    fused = [("a", 1.0), ("b", 0.8), ("c", 0.5), ("d", 0.2)]
    tags = {"b": ["speaker:ana"], "c": ["speaker:user"], "d": ["speaker:user"]}
    boosted = boost_speakers(fused, tags, query="What did I say?", weight=0.3)
    # c 0.5 + 0.3 and d 0.2 + 0.3; c ties b at 0.8 and keeps its place after it
    assert boosted == [
        ("a", 1.0),
        ("b", 0.8),
        ("c", pytest.approx(0.8)),
        ("d", pytest.approx(0.5)),
    ]


def test_scores_above_one_are_rescaled_so_the_best_is_one():
    fused = [("a", 1.0), ("b", 0.9)]
    boosted = boost_speakers(fused, {"b": ["speaker:ana"]}, query="Ana?", weight=0.5)
    assert boosted == [("b", 1.0), ("a", pytest.approx(1.0 / 1.4))]


def test_no_named_speaker_or_no_weight_keeps_the_fused_list():
    fused = [("a", 1.0), ("b", 0.5)]
    tags = {"b": ["speaker:ana"]}
    assert boost_speakers(fused, tags, query="What did Bo say?", weight=0.3) == fused
    assert boost_speakers(fused, tags, query="What did Ana say?", weight=0.0) == fused
    assert boost_speakers([], {}, query="Ana", weight=0.3) == []
