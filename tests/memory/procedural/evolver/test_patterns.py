"""Pure evolver algorithms: grouping and thresholds, supersession verdicts, skill text."""

import pytest

from memory.procedural.evolver import skill_text
from memory.procedural.evolver.patterns import (
    Trajectory,
    eligible_patterns,
    group_trajectories,
)
from memory.procedural.evolver.supersession import (
    Skill,
    Verdict,
    coverage,
    jaccard,
    judge,
    judge_one,
)


def _t(n, agent, outcome, task_type="deploy", error="", tools=()):
    return Trajectory(
        report_id=f"r{n}",
        agent_id=agent,
        outcome=outcome,
        task_type=task_type,
        error_category=error,
        tool_names=tuple(tools),
    )


def test_grouping_keys_populations_and_confidence():
    trajectories = [
        _t(1, 1, "failed", error="Timeout"),
        _t(2, 2, "failed", error="timeout"),
        _t(3, 3, "partial", error="timeout"),
        _t(4, 4, "succeeded", tools=("helm", "kubectl")),  # same task type: population 4
        _t(5, 1, "succeeded", task_type="review", tools=("git", "lint")),
        _t(6, 2, "succeeded", task_type="review", tools=("git", "lint")),
        _t(7, 3, "failed", task_type="review", tools=("git", "lint")),  # no error category
        _t(8, 5, "failed", task_type="other", error="auth"),
    ]
    patterns = {p.key: p for p in group_trajectories(trajectories)}
    assert sorted(patterns) == [
        "failure:auth",
        "failure:timeout",
        "success:git>lint",
        "success:helm>kubectl",
    ]
    timeout = patterns["failure:timeout"]
    assert (timeout.kind, timeout.report_ids, timeout.agent_ids) == (
        "failure",
        ["r1", "r2", "r3"],
        [1, 2, 3],
    )
    assert (timeout.population, timeout.confidence) == (4, 0.75)  # 3 of 4 deploy runs
    lint = patterns["success:git>lint"]
    assert (len(lint.reports), lint.population, lint.confidence) == (2, 3, 0.6667)
    assert patterns["failure:auth"].confidence == 1.0


def test_thresholds_min_agents_min_confidence_and_cap():
    trajectories = [_t(n, n, "failed", error="timeout") for n in range(1, 4)]  # 3 agents, 1.0
    trajectories += [_t(10 + n, 1, "failed", task_type="x", error="oom") for n in range(5)]
    trajectories += [_t(20 + n, n, "failed", task_type="y", error="disk") for n in range(1, 5)]
    trajectories += [_t(30 + n, n, "succeeded", task_type="y") for n in range(1, 5)]  # 4/8
    patterns = group_trajectories(trajectories)
    keep = eligible_patterns(patterns, min_agents=3, min_confidence=0.8, max_proposals=10)
    assert [p.key for p in keep] == ["failure:timeout"]  # oom: 1 agent; disk: 0.5
    low = eligible_patterns(patterns, min_agents=3, min_confidence=0.5, max_proposals=10)
    assert [p.key for p in low] == ["failure:timeout", "failure:disk"]
    assert [
        p.key
        for p in eligible_patterns(patterns, min_agents=1, min_confidence=0.5, max_proposals=2)
    ] == ["failure:timeout", "failure:oom"]  # both 1.0: more distinct agents ranks first


def test_jaccard_and_coverage_by_hand():
    assert jaccard("Deploy the billing service", "deploy billing") == pytest.approx(2 / 4)
    assert coverage("when helm upgrade times out on billing", "helm upgrade times out") == 1.0
    assert coverage("helm", "helm upgrade") == 0.5


EXISTING = Skill(
    condition="when a helm upgrade times out",
    action="retry the helm upgrade with a longer timeout",
    confidence=0.7,
    ref="old",
)


def test_conflict_same_situation_different_action():
    proposal = Skill(
        condition="when a helm upgrade times out",
        action="roll back the release and page the on-call engineer",
        confidence=0.9,
    )
    judgement = judge_one(proposal, EXISTING)
    assert judgement.verdict is Verdict.CONFLICT
    assert judgement.condition_jaccard == 1.0
    assert judgement.action_jaccard < 0.5


def test_full_superset_condition_compatible_action_higher_confidence():
    proposal = Skill(
        condition="when a helm upgrade times out on a large chart",
        action="retry the helm upgrade with a longer timeout and atomic",
        confidence=0.9,
    )
    judgement = judge_one(proposal, EXISTING)
    assert judgement.verdict is Verdict.FULL
    assert judgement.condition_coverage == 1.0 and judgement.action_jaccard >= 0.5
    weaker = Skill(proposal.condition, proposal.action, confidence=0.6)
    assert judge_one(weaker, EXISTING).verdict is Verdict.PARTIAL


def test_partial_when_unrelated():
    proposal = Skill(
        condition="when the linter reports unused imports",
        action="run ruff with --fix before committing",
        confidence=0.95,
    )
    assert judge_one(proposal, EXISTING).verdict is Verdict.PARTIAL
    assert judge(proposal, []).verdict is Verdict.PARTIAL


def test_conflict_is_checked_before_full():
    # Both CONFLICT (cond J 1.0 ≥ 0.5, action J 0.44 < 0.5) and, were the action threshold
    # the only check, FULL-like coverage 1.0 — CONFLICT must win.
    existing = Skill(condition="when tests fail", action="a b c d e", confidence=0.1, ref="x")
    proposal = Skill(condition="when tests fail", action="a b c d f g h i", confidence=0.9)
    assert jaccard(proposal.action, existing.action) < 0.5
    assert judge_one(proposal, existing).verdict is Verdict.CONFLICT
    full_match = Skill(condition="when tests fail", action="a b c d e f", confidence=0.1, ref="y")
    # against several: a CONFLICT with any existing entry wins over a FULL with another
    assert judge(proposal, [full_match, existing]).verdict is Verdict.CONFLICT
    compatible = Skill(condition="when tests fail", action="a b c d e f", confidence=0.9)
    verdict = judge(compatible, [full_match])
    assert (verdict.verdict, verdict.existing.ref) == (Verdict.FULL, "y")


def test_skill_text_round_trip():
    proposal = {
        "discovery": "Helm upgrades time out; raise --timeout.",
        "condition": "a helm upgrade times out",
        "action": "retry with --timeout 900s",
        "rationale": "hooks run migrations",
        "execution_steps": ["check hooks", "retry"],
    }
    text = skill_text.render(proposal)
    assert text.splitlines()[1:3] == [
        "When: a helm upgrade times out",
        "Do: retry with --timeout 900s",
    ]
    tags = skill_text.tags(confidence=0.857, pattern="failure:timeout", item_id="abc")
    assert tags == ["skill", "confidence:0.86", "pattern:failure:timeout", "approval:abc"]
    assert skill_text.parse(text, tags) == (
        "a helm upgrade times out",
        "retry with --timeout 900s",
        0.86,
    )
    assert skill_text.parse("Always pin versions.", []) == (
        "Always pin versions.",
        "Always pin versions.",
        1.0,
    )
