"""What a report teaches, the facts a lesson states, and contradictions (pure)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.procedural.advice import (
    Advice,
    Directive,
    Situation,
    advice_for_report,
    advice_from_text,
    contradiction,
    directives_from_text,
    evidence_of,
    render_evidence,
)
from memory.procedural.evolver.rule_drafting import rule_draft, skill_advice
from memory.procedural.rule_lessons import rule_lesson

DEMO = {
    "task_type": "deploy",
    "outcome": "partial",
    "error_category": "timeout",
    "error_message": "helm upgrade timed out after 300s",
    "tool_calls": [{"name": "helm_upgrade", "status": "failed"}],
    "retry_count": 2,
    "recovery": "Rolled back, then reran helm upgrade with --timeout 600s and --wait.",
}
RECOVERY = DEMO["recovery"]


def directives(advice: Advice) -> list[tuple[str, str, str]]:
    return [(d.stance, d.kind, d.action) for d in advice.directives]


def test_a_partial_success_after_a_recovery_teaches_the_recovery():
    advice = advice_for_report(DEMO)
    assert advice.situation == Situation("deploy", "timeout", "helm_upgrade", "partial")
    assert directives(advice) == [("do", "recovery", RECOVERY)]


def test_a_failure_the_recovery_did_not_fix_teaches_to_avoid_it():
    advice = advice_for_report({**DEMO, "outcome": "failed"})
    assert directives(advice) == [
        ("avoid", "recovery", RECOVERY),
        ("do", "escalate", "change `helm_upgrade`'s inputs or escalate"),
    ]


def test_a_failure_with_nothing_else_known_teaches_not_to_retry_unchanged():
    advice = advice_for_report({**DEMO, "outcome": "failed", "recovery": ""})
    assert directives(advice) == [
        ("avoid", "retry_unchanged", "retry `helm_upgrade` unchanged"),
        ("do", "escalate", "change `helm_upgrade`'s inputs or escalate"),
    ]


def test_what_finally_succeeded_is_what_a_failure_teaches():
    calls = [
        {"name": "helm_upgrade", "status": "timeout"},
        {"name": "helm_rollback", "status": "succeeded"},
        {"name": "helm_upgrade_wait", "status": "succeeded"},
    ]
    advice = advice_for_report({**DEMO, "outcome": "failed", "tool_calls": calls})
    assert directives(advice) == [("do", "sequence", "helm_rollback > helm_upgrade_wait")]


def test_a_success_teaches_its_tool_order():
    calls = [{"name": "lint", "status": "succeeded"}, {"name": "test", "status": "succeeded"}]
    advice = advice_for_report({"task_type": "review", "outcome": "succeeded", "tool_calls": calls})
    assert advice.situation == Situation("review", "", "", "succeeded")
    assert directives(advice) == [("do", "sequence", "lint > test")]


def test_the_partial_and_the_failed_lessons_contradict_each_other():
    partial, failed = advice_for_report(DEMO), advice_for_report({**DEMO, "outcome": "failed"})
    clash = contradiction(partial, failed)
    assert clash is not None and (clash.do, clash.avoid) == (RECOVERY, RECOVERY)
    assert contradiction(partial, partial) is None


def test_different_situations_never_contradict():
    partial = advice_for_report(DEMO)
    other_tool = advice_for_report(
        {**DEMO, "outcome": "failed", "tool_calls": [{"name": "kubectl", "status": "failed"}]}
    )
    assert contradiction(partial, other_tool) is None


def test_a_persons_text_states_directives():
    assert directives_from_text(
        "## Company policies (always apply)\n- Never roll back production without approval.\n"
        "- Always run the smoke tests after a deploy."
    ) == (
        Directive("avoid", "roll back production without approval"),
        Directive("do", "run the smoke tests after a deploy"),
    )
    # a Do: line is advice, its negated sentences are avoid
    assert directives_from_text("Do: Roll back first. Do not rerun unchanged.") == (
        Directive("do", "Roll back first"),
        Directive("avoid", "rerun unchanged"),
    )
    assert directives_from_text("The cluster is eks-prod.") == ()


def test_a_rendered_lesson_reads_back_as_its_own_advice():
    """The text a lesson shows states the advice it stores (a person reading it, or a check
    reading the text, finds the same directives)."""
    for report in (
        DEMO,
        {**DEMO, "outcome": "failed"},
        {**DEMO, "outcome": "failed", "recovery": ""},
    ):
        lesson = rule_lesson(report, path="failure")
        stored = Advice.from_dict(lesson.advice)
        read = advice_from_text(f"Do: {lesson.action}")
        assert stored is not None and contradiction(stored, read) is None
        assert len(read.directives) == len(stored.directives)


def test_the_demo_skill_agrees_with_the_lessons_and_states_its_evidence_exactly():
    day = datetime(2026, 12, 1, 9, tzinfo=UTC)
    reports = [{**DEMO, "agent_id": n, "created_at": day} for n in (1, 2, 3)]
    names = {1: "deployer", 2: "planner", 3: "reviewer"}
    skill = rule_draft(
        pattern="failure:timeout", confidence=1.0, reports=reports, agent_names=names
    )
    assert skill.discovery == (
        "'deploy' tasks with a 'timeout' error in `helm_upgrade`: recover as the agent "
        f"reported: {RECOVERY}"
    )
    assert skill.action == f"Recover as the agent reported: {RECOVERY}"
    assert skill.rationale == (
        "Evidence: 3 execution reports of 3 agents (deployer, planner, reviewer) (3 partial); "
        "task type 'deploy'; error category 'timeout'; failing tool `helm_upgrade`; 2 retries "
        "each; reported 2026-12-01. 3 of 3 reports support this advice. Drafted without an LLM, "
        "from the reports' fields."
    )
    lesson = Advice.from_dict(rule_lesson(DEMO, path="failure").advice)
    assert contradiction(Advice.from_dict(skill.advice), lesson) is None


def test_a_skill_follows_the_majority_and_says_how_many_differ():
    reports = [DEMO, {**DEMO, "outcome": "failed"}, DEMO]
    found = skill_advice(reports)
    assert directives(found.advice) == [("do", "recovery", RECOVERY)]
    assert found.support_note == "2 of 3 reports support this advice; 1 advise otherwise."


# --- every fact a lesson states is the records' (property) ------------------------------------

names = st.from_regex(r"[a-z][a-z_]{2,12}", fullmatch=True)
calls = st.lists(
    st.fixed_dictionaries(
        {"name": names, "status": st.sampled_from(["succeeded", "failed", "timeout", "skipped"])}
    ),
    max_size=4,
)
reports = st.fixed_dictionaries(
    {
        "task_type": st.one_of(st.just(""), names),
        "outcome": st.sampled_from(["failed", "partial", "succeeded"]),
        "error_category": st.one_of(st.just(""), names),
        "error_message": st.text(
            st.characters(codec="ascii", categories=["L", "N", "Zs"]), max_size=60
        ),
        "tool_calls": calls,
        "retry_count": st.integers(0, 20),
        "recovery": st.one_of(st.just(""), st.from_regex(r"[A-Z][a-z ]{5,40}\.", fullmatch=True)),
        "created_at": st.datetimes(
            min_value=datetime(2024, 1, 1), max_value=datetime(2027, 1, 1), timezones=st.just(UTC)
        ),
    }
)

_EVIDENCE = re.compile(
    r"Evidence: (?P<n>\d+) execution reports?(?: of \d+ agents? \([^)]*\))? \((?P<outcomes>[^)]*)\)"
    r"(?:; task type '(?P<task>[^']*)')?(?:; error category '(?P<category>[^']*)')?"
    r"(?:; failing tool `(?P<tool>[^`]*)`)?; (?P<retries>\d+) retr(?:y|ies)(?: each)?"
    r"; reported (?P<day>\d{4}-\d{2}-\d{2})\."
)


@settings(max_examples=80, deadline=None)
@given(reports)
def test_every_fact_a_rule_lesson_states_matches_its_report(report):
    path = "success" if report["outcome"] == "succeeded" else "failure"
    lesson = rule_lesson(report, path=path)
    match = _EVIDENCE.search(lesson.rationale)
    assert match is not None, lesson.rationale
    assert int(match["n"]) == 1
    assert match["outcomes"] == f"1 {report['outcome']}"
    assert int(match["retries"]) == report["retry_count"]
    assert match["day"] == report["created_at"].date().isoformat()
    assert (match["task"] or "") == report["task_type"]
    failed = report["outcome"] != "succeeded"
    assert (match["category"] or "") == (report["error_category"] if failed else "")
    failing = [c["name"] for c in report["tool_calls"] if c["status"] in ("failed", "timeout")]
    assert (match["tool"] or "") == (failing[-1] if failed and failing else "")
    # the advice text names only tools the report ran
    for tool in re.findall(r"`([^`]+)`", lesson.discovery + lesson.action):
        assert tool in {c["name"] for c in report["tool_calls"]}


@settings(max_examples=50, deadline=None)
@given(st.lists(reports, min_size=1, max_size=6))
def test_every_fact_a_skill_states_matches_its_reports(members):
    evidence = evidence_of(members)
    text = render_evidence(evidence)
    outcomes = {
        o: sum(r["outcome"] == o for r in members) for o in ("failed", "partial", "succeeded")
    }
    found = re.findall(r"(\d+) (failed|partial|succeeded)", text.split(";")[0])
    assert {outcome: int(n) for n, outcome in found} == {k: v for k, v in outcomes.items() if v}
    retries = sorted({r["retry_count"] for r in members})
    if len(retries) == 1:
        assert f"; {retries[0]} retr" in text
    else:
        assert f"; {retries[0]} to {retries[-1]} retries" in text
    days = sorted(r["created_at"].date().isoformat() for r in members)
    assert days[0] in text and days[-1] in text
