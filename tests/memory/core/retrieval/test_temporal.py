"""Time anchors, "latest" questions and sessions (memory.core.retrieval.temporal)."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.core.retrieval.temporal import (
    asks_latest,
    prefer_latest,
    spread_sessions,
    time_window,
)

# a Saturday
ASKED = datetime(2023, 7, 15, 7, 37, tzinfo=UTC)


def day(month, d, year=2023):
    return datetime(year, month, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did I buy yesterday?", day(7, 14), day(7, 15)),
        ("What did I cook today?", day(7, 15), day(7, 16)),
        ("Where did we eat last week?", day(7, 3), day(7, 10)),
        ("What happened this week?", day(7, 10), day(7, 17)),
        ("How many parties did I attend in the past month?", day(6, 15), day(7, 16)),
        ("What did I read in the past week?", day(7, 8), day(7, 16)),
        ("Which book did I finish last month?", day(6, 1), day(7, 1)),
        ("Where did I travel last year?", day(1, 1, 2022), day(1, 1)),
        ("What did Gina open in May 2023?", day(5, 1), day(6, 1)),
        ("When did Melanie go camping in June?", day(6, 1), day(7, 1)),
        # August has not begun by 15 July 2023: the latest August is 2022's
        ("When did Caroline attend a parade in August?", day(8, 1, 2022), day(9, 1, 2022)),
        ("What did I plant mid-March?", day(3, 1), day(4, 1)),
        ("What did I fix 3 days ago?", day(7, 11), day(7, 14)),
        ("Who called two weeks ago?", day(6, 28), day(7, 5)),
        ("What did I sell a few months ago?", day(4, 1), day(5, 1)),
        ("Where did Caroline move from 4 years ago?", day(1, 1, 2019), day(1, 1, 2020)),
        ("What painting was shown on October 13, 2023?", day(10, 13), day(10, 14)),
        ("What did Gina find on 1 February, 2023?", day(2, 1), day(2, 2)),
        ("How often did Melanie go to the beach in 2022?", day(1, 1, 2022), day(1, 1)),
        ("What did we do last weekend?", day(7, 8), day(7, 10)),
        ("Who did I meet last Monday?", day(7, 10), day(7, 11)),
        # the first anchor in the text wins
        ("What did I do in May 2023, and last week?", day(5, 1), day(6, 1)),
    ],
)
def test_time_window_is_exact(question, start, end):
    window = time_window(question, ASKED)
    assert window is not None
    assert (window.start, window.end) == (start, end)


def test_time_window_reads_the_reference_day_in_utc():
    asked = datetime(2023, 7, 15, 1, 0, tzinfo=timezone(timedelta(hours=5)))  # 14 July UTC
    window = time_window("what did I buy yesterday", asked)
    assert window is not None
    assert (window.start, window.end, window.anchor) == (day(7, 13), day(7, 14), "yesterday")


@pytest.mark.parametrize(
    "question",
    [
        "What brand of BBQ sauce am I currently obsessed with?",
        "When did Caroline go to the LGBTQ support group?",
        "How many weeks did the course last?",
        "May I ask what my favourite colour is?",
    ],
)
def test_no_anchor_no_window(question):
    assert time_window(question, ASKED) is None


def test_asks_latest():
    assert asks_latest("What brand am I currently obsessed with?")
    assert asks_latest("What is my latest score?")
    assert asks_latest("Where do I live now?")
    assert not asks_latest("Where did I live in 2020?")


def test_prefer_latest_moves_the_newest_up():
    created = {"old": day(1, 1), "mid": day(3, 1), "new": day(5, 1)}
    fused = [("old", 1.0), ("mid", 0.9), ("new", 0.8)]
    # old 1.0 + 0; mid 0.9 + 0.5 × 59/120; new 0.8 + 0.5, rescaled by 1.3
    ranked = prefer_latest(fused, created, weight=0.5)
    assert [key for key, _ in ranked] == ["new", "mid", "old"]
    assert ranked[0][1] == pytest.approx(1.0)
    assert ranked[2][1] == pytest.approx(1.0 / 1.3)
    assert prefer_latest(fused, created, weight=0.0) == fused


def test_spread_sessions_takes_a_second_session_before_a_third_turn_of_the_first():
    start = day(7, 1)
    created = {
        "a1": start,
        "a2": start + timedelta(minutes=5),
        "a3": start + timedelta(minutes=10),
        "b1": start + timedelta(days=3),
    }
    fused = [("a1", 1.0), ("a2", 0.9), ("a3", 0.8), ("b1", 0.5)]
    ranked = spread_sessions(fused, created, weight=1.0)
    # a1 1.0; then a2 0.9 / 2 = 0.45 < b1 0.5; then a2 0.45; a3 0.8 / 3
    assert ranked == [("a1", 1.0), ("b1", 0.5), ("a2", 0.45), ("a3", pytest.approx(0.8 / 3))]
    assert spread_sessions(fused, created, weight=0.0) == fused
