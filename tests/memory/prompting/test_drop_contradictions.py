"""Which of two contradicting entries reaches the agent (pure: the entries' advice given)."""

from __future__ import annotations

from memory.procedural.advice import Advice, Directive, Situation
from memory.prompting.context import ContextEntry, drop_contradictions

SITUATION = Situation("deploy", "timeout", "helm_upgrade")
ROLLBACK = "roll back, then rerun helm upgrade with --wait"
DO = Advice(SITUATION, (Directive("do", ROLLBACK),))
AVOID = Advice(SITUATION, (Directive("avoid", ROLLBACK),))
UNRELATED = Advice(Situation("review"), (Directive("do", "run the linters first"),))


def entry(key: str, score: float) -> ContextEntry:
    return ContextEntry(key=key, content=key, score=score)


def keys(entries) -> list[str]:
    return [e.key for e in entries]


def test_an_org_skill_ranked_below_two_lessons_it_contradicts_leaves_both_out():
    entries = [entry("lesson-a", 0.9), entry("lesson-b", 0.8), entry("skill", 0.5)]
    kept, left_out = drop_contradictions(
        entries,
        advice={
            "lesson-a": ("lesson", AVOID),
            "lesson-b": ("lesson", AVOID),
            "skill": ("org_skill", DO),
        },
    )
    assert keys(kept) == ["skill"]
    assert [(e.key, e.reason.split(":")[0]) for e in left_out] == [
        ("lesson-a", "contradicts an approved org skill"),
        ("lesson-b", "contradicts an approved org skill"),
    ]


def test_of_two_lessons_the_higher_ranked_stays_and_others_are_untouched():
    entries = [entry("first", 0.9), entry("plain", 0.85), entry("second", 0.8), entry("other", 0.7)]
    kept, left_out = drop_contradictions(
        entries,
        advice={
            "first": ("lesson", DO),
            "second": ("lesson", AVOID),
            "other": ("lesson", UNRELATED),
        },
    )
    assert keys(kept) == ["first", "plain", "other"]
    assert [(e.key, e.reason) for e in left_out] == [
        (
            "second",
            f"contradicts a lesson ranked higher: one says to do '{ROLLBACK}', "
            "the other to avoid it",
        )
    ]


def test_a_core_policy_leaves_out_what_contradicts_it():
    kept, left_out = drop_contradictions(
        [entry("lesson", 0.9)],
        pinned=[
            "## Company policies (always apply)\n"
            "- Never roll back, then rerun helm upgrade with --wait."
        ],
        advice={"lesson": ("lesson", DO)},
    )
    assert kept == [] and left_out[0].reason.startswith("contradicts a core policy: ")
