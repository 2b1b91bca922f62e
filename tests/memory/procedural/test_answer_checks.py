"""An LLM's lesson is checked against the records before it becomes anything (pure)."""

from __future__ import annotations

import pytest

from memory.procedural.advice import advice_for_report
from memory.procedural.answer_checks import answer_problems
from memory.procedural.domain import ProceduralMemoryProposal
from tests.memory.procedural.test_advice import DEMO


def proposal(**tiers) -> ProceduralMemoryProposal:
    base = {
        "discovery": "Helm upgrades of billing time out at 300s: raise the timeout.",
        "condition": "A helm upgrade times out at 300s.",
        "action": "Roll back, then rerun helm upgrade with --timeout 600s --wait.",
        "rationale": "The chart needs more than the default 300s.",
        "execution_steps": ["Roll back", "Rerun with --timeout 600s --wait"],
        "confidence": 0.9,
    }
    return ProceduralMemoryProposal(**{**base, **tiers})


def problems(**tiers) -> list[str]:
    return answer_problems(proposal(**tiers), records=[DEMO], advice=advice_for_report(DEMO))


def test_a_grounded_answer_that_agrees_with_the_evidence_is_accepted():
    assert problems() == []


def test_the_small_models_nonsense_is_refused_for_every_reason_it_has():
    """What Gemma 3 270M answered for a helm timeout through llama.cpp's server."""
    assert problems(
        discovery="null",
        condition="null",
        action="destroy",
        rationale="100%",
        execution_steps=["destroy"],
    ) == [
        "placeholder: the discovery says 'null'",
        "placeholder: the condition says 'null'",
        "ungrounded: it names no task type, error, tool, nor any word of the error or the recovery",
        "unstated number: 100 appears in no record",
        "destructive: it advises destroy, which no record mentions",
    ]


def test_advice_against_what_the_records_show_worked_is_refused():
    assert problems(
        action="Do not roll back and rerun helm upgrade with --timeout 600s and --wait."
    ) == [
        "contradicts the evidence: one says to do 'Rolled back, then reran helm upgrade with "
        "--timeout 600s and --wait.', the other to avoid it"
    ]


@pytest.mark.parametrize(
    ("tiers", "number"),
    [
        ({"rationale": "It failed 3 times before."}, "3"),
        ({"discovery": "Helm upgrades time out 40% of the time."}, "40"),
        ({"execution_steps": ["Retry 5 times with backoff"]}, "5"),
    ],
)
def test_a_count_the_records_do_not_hold_is_refused(tiers, number):
    assert problems(**tiers) == [f"unstated number: {number} appears in no record"]


def test_a_count_the_records_hold_and_a_proposed_setting_are_fine():
    assert (
        problems(
            rationale="2 retries did not help.",
            action="Rerun helm upgrade with --timeout 900s --wait.",
        )
        == []
    )


def test_an_action_that_is_not_advice_is_refused():
    assert problems(action="Helm.") == ["placeholder: the action 'Helm.' is not advice"]


def test_an_answer_that_copies_the_prompts_template_is_refused():
    """What Gemma 3 270M answered with the lesson schema and no length bounds."""
    found = problems(discovery="one or two sentences (<= 600 chars) an agent would search for")
    assert found[0] == "template: the discovery copies the prompt's answer template"
