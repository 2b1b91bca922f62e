"""bench/learning_quality.py's pure parts: a failure log becomes an execution report from what
the run shows (never its annotations), and the scoring helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.learning_quality import (
    ANNOTATIONS,
    Fact,
    Records,
    check_text,
    contradicting_pairs,
    derangement,
    error_in,
    fact_matches,
    follow_up_query,
    names_agent,
    report_from_log,
    stated_facts,
    task_type_of,
    token_f1,
)
from memory.procedural.advice import Advice, Directive, Situation, advice_for_report
from memory.procedural.domain import ExecutionReportInput

DEV = Path(__file__).resolve().parents[2].parent / "shared" / "bench-data" / "who_and_when_dev.json"

LOG = {
    "id": "algorithm-generated-x",
    "system": "algorithm-generated",
    "question": "How many stops are there between Alpha and Omega on the Zeta line?",
    "ground_truth": "GROUNDTRUTH-SENTINEL-42",
    "history": [
        {"role": "assistant", "name": "Planner_Expert", "content": "You are given a task: ..."},
        {
            "role": "user",
            "name": "Transit_Expert",
            "content": "I will count them.\n```python\nprint(len(stops))\n```",
        },
        {
            "role": "user",
            "name": "Computer_terminal",
            "content": "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call "
            "last):\n  File \"x.py\", line 1\nNameError: name 'stops' is not defined",
        },
        {
            "role": "assistant",
            "name": "Transit_Expert",
            "content": "Fixed it.\n```python\nstops = [1, 2]\nprint(len(stops))\n```",
        },
        {
            "role": "user",
            "name": "Computer_terminal",
            "content": "exitcode: 0 (execution succeeded)\n2",
        },
        {
            "role": "assistant",
            "name": "Verification_Expert",
            "content": "FINAL ANSWER: 2\nTERMINATE",
        },
    ],
    "mistake_agent": "MISTAKEAGENT_SENTINEL",
    "mistake_step": "7777",
    "mistake_reason": "REASON-SENTINEL: the expert miscounted the stops.",
}

MAGENTIC = {
    "id": "hand-crafted-x",
    "system": "hand-crafted",
    "question": "What is on the attached spreadsheet?",
    "ground_truth": "x",
    "history": [
        {"role": "human", "content": "What is on the attached spreadsheet?"},
        {"role": "Orchestrator (thought)", "content": "Plan: ask the FileSurfer."},
        {"role": "Orchestrator (-> FileSurfer)", "content": "Open the file."},
        {"role": "FileSurfer", "content": "Error. Could not transcribe this audio."},
        {"role": "Orchestrator (termination condition)", "content": "FINAL ANSWER: nothing"},
    ],
    "mistake_agent": "FileSurfer",
    "mistake_step": "3",
    "mistake_reason": "The FileSurfer could not open the file.",
}


def test_report_from_log_shows_what_the_run_shows():
    report = report_from_log(LOG)
    ExecutionReportInput.model_validate(report)  # the API would accept it
    assert report["outcome"] == "failed"
    assert report["task_title"] == LOG["question"]
    assert report["task_type"] == "calculation"
    assert report["turn_count"] == 6
    # the task statement is no call; a terminal's output is its code author's execution
    assert [(c["name"], c["status"]) for c in report["tool_calls"]] == [
        ("Transit_Expert", "succeeded"),
        ("Transit_Expert", "failed"),
        ("Transit_Expert", "succeeded"),
        ("Transit_Expert", "succeeded"),
        ("Verification_Expert", "succeeded"),
    ]
    assert report["tool_calls"][1]["error"] == "NameError: name 'stops' is not defined"
    assert report["error"] == {
        "category": "code_error",
        "message": "NameError: name 'stops' is not defined",
    }
    assert report["retry_count"] == 1  # the failed call's agent was called again
    assert "Final answer given (wrong): 2" in report["task_description"]


def test_report_from_a_magentic_one_log():
    report = report_from_log(MAGENTIC)
    ExecutionReportInput.model_validate(report)
    assert [c["name"] for c in report["tool_calls"]] == [
        "Orchestrator",
        "Orchestrator",
        "FileSurfer",
        "Orchestrator",
    ]
    assert report["tool_calls"][2]["status"] == "failed"
    assert report["error"]["category"] == "tool_error"
    assert report["task_type"] == "file_analysis"
    # the rule path's failing tool is the agent whose call failed last
    assert advice_for_report(report).situation.tool == "FileSurfer"


def test_a_run_without_errors_is_a_wrong_answer():
    log = {**LOG, "history": [LOG["history"][0], LOG["history"][-1]]}
    report = report_from_log(log)
    assert report["error"] == {"category": "wrong_answer", "message": "Final answer (wrong): 2"}
    assert all(c["status"] == "succeeded" for c in report["tool_calls"])


def test_annotations_never_leak_into_the_report():
    report = json.dumps(report_from_log(LOG))
    for sentinel in ("GROUNDTRUTH-SENTINEL", "MISTAKEAGENT_SENTINEL", "7777", "REASON-SENTINEL"):
        assert sentinel not in report
    # the annotations cannot change the report
    stripped = {k: v for k, v in LOG.items() if k not in ANNOTATIONS}
    assert report_from_log(stripped) == report_from_log(LOG)
    changed = {**LOG, "mistake_agent": "Transit_Expert", "mistake_step": "1", "ground_truth": "2"}
    assert report_from_log(changed) == report_from_log(LOG)


@pytest.mark.skipif(not DEV.exists(), reason="the Who&When dev split is not beside the checkout")
def test_every_dev_log_gives_a_valid_report_without_its_reason():
    items = json.loads(DEV.read_text())["items"]
    for item in items:
        report = report_from_log(item)
        ExecutionReportInput.model_validate(report)
        assert item["mistake_reason"] not in json.dumps(report)
        assert report_from_log({k: v for k, v in item.items() if k not in ANNOTATIONS}) == report


def test_error_in():
    assert error_in("exitcode: 0 (execution succeeded)\n42", execution=True) == ""
    assert error_in("exitcode: 1 (execution failed)\nCode output: ", execution=True).startswith(
        "exitcode: 1"
    )
    assert error_in("Here:\n```\nKeyError: 'x'\n```\nall good", execution=False) == ""
    assert error_in("openai.APIConnectionError: Connection error.", execution=False) == (
        "openai.APIConnectionError: Connection error."
    )


def test_task_types_and_follow_up_query():
    assert task_type_of("Open the attached PDF and count the tables") == "file_analysis"
    assert task_type_of("How many medals did Norway win?") == "calculation"
    assert task_type_of("Who wrote the novel?") == "lookup"
    query = follow_up_query("How many stops are there between Alpha and Omega on the Zeta line?")
    assert query == "Follow-up task: many stops between alpha omega zeta line"


def test_derangement_pairs_within_a_group_and_never_with_itself():
    keys = ["a1", "a2", "a3", "a4", "b1", "b2", "c1"]
    groups = ["a", "a", "a", "a", "b", "b", "c"]
    pairs = derangement(keys, groups)
    assert pairs["a1"] == "a3" and pairs["a3"] == "a1" and pairs["b1"] == "b2"
    assert all(pairs[k] != k for k in keys)
    assert pairs["c1"] in keys  # a group of one pairs across groups
    assert derangement(keys, groups) == pairs  # fixed


def test_names_agent_and_token_f1():
    assert names_agent("Do not retry `Verification_Expert` unchanged.", "Verification_Expert")
    assert names_agent("the verification expert erred", "Verification_Expert")
    assert not names_agent("the DataVerification_Expert erred", "Verification_Expert")
    assert not names_agent("WebSurfers", "WebSurfer")
    assert token_f1("the surfer clicked the wrong link", "WebSurfer clicked a wrong link") == (
        pytest.approx(2 * (3 / 4) * (3 / 4) / (3 / 4 + 3 / 4))
    )
    assert token_f1("", "anything") == 0.0


def _records(**fields):
    report = {
        "outcome": "failed",
        "retry_count": 2,
        "task_type": "deploy",
        "error_category": "timeout",
        "error_message": "helm upgrade timed out after 300s",
        "tool_calls": [{"name": "helm_upgrade", "status": "failed"}],
        "created_at": "2026-01-05T10:00:00+00:00",
        **fields,
    }
    return Records([report], ["deployer"])


def test_stated_facts_are_checked_against_the_records():
    text = (
        "'deploy' tasks with a 'timeout' error in `helm_upgrade`: roll back. Evidence: "
        "1 execution report (1 failed); task type 'deploy'; 2 retries; reported 2026-01-05."
    )
    stated, matching, wrong = check_text(text, _records())
    assert (stated, matching, wrong) == (stated, stated, [])
    assert stated >= 7
    wrong_text = (
        "Evidence: 3 execution reports (1 partial); error category 'oom'; 0 retries; "
        "failing tool `kubectl`; reported 2025-12-31."
    )
    stated, matching, wrong = check_text(wrong_text, _records())
    assert matching == 0 and len(wrong) == stated == 6


def test_quoted_record_text_states_no_fact():
    records = _records(error_message="Got 5 reports from 3 agents and 'disk' errors")
    text = "When: it fails (Got 5 reports from 3 agents and 'disk' errors). Evidence: 1 failed."
    stated, matching, _ = check_text(text, records)
    assert (stated, matching) == (1, 1)


def test_fact_kinds():
    facts = {f.kind for f in stated_facts("2 to 4 retries; 3 agents; `a > b`")}
    assert facts == {"retry_range", "agents", "name"}
    records = Records(
        [
            {"outcome": "failed", "retry_count": 2, "tool_calls": [{"name": "a"}]},
            {"outcome": "partial", "retry_count": 4, "tool_calls": [{"name": "b"}]},
        ],
        ["x", "y", "y"],
    )
    assert fact_matches(Fact("retry_range", (2, 4), ""), records)
    assert fact_matches(Fact("agents", 2, ""), records)
    assert fact_matches(Fact("name", "a > b", ""), records)
    assert not fact_matches(Fact("name", "a > c", ""), records)


def test_contradicting_pairs():
    deploy = Situation(task_type="deploy")
    do = Advice(deploy, (Directive("do", "rerun helm upgrade with a longer timeout"),))
    avoid = Advice(deploy, (Directive("avoid", "rerun helm upgrade with a longer timeout"),))
    other = Advice(Situation(task_type="backup"), avoid.directives)
    assert [(i, j) for i, j, _ in contradicting_pairs([do, avoid, other])] == [(0, 1)]
