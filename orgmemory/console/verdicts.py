"""Plain-language supersession verdicts for the item page.

The skill evolver (``memory/procedural/evolver/supersession.py``) judges each proposal against
the org's existing skills and stores the verdict's name in the item's evidence; this is what
the name means for the human deciding. A test holds the keys equal to the evolver's verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VerdictText:
    label: str
    meaning: str
    on_approve: str


VERDICTS: dict[str, VerdictText] = {
    "FULL": VerdictText(
        label="Replaces an existing skill",
        meaning=(
            "The proposal covers at least 80% of an existing org skill's situation, gives "
            "similar advice and has a higher confidence."
        ),
        on_approve="Approving publishes the proposal and retracts the skill it replaces.",
    ),
    "PARTIAL": VerdictText(
        label="Adds a skill beside the existing ones",
        meaning=(
            "No existing org skill covers the same situation closely enough to be replaced "
            "(or none exists yet)."
        ),
        on_approve="Approving publishes the proposal; every existing skill stays as it is.",
    ),
    "CONTRADICTS": VerdictText(
        label="Contradicts what agents already hold",
        meaning=(
            "The proposal's advice is the opposite of live lessons or core policies for the "
            "same situation: one says to do what the other says to avoid. Each is listed "
            "below, side by side with the proposal."
        ),
        on_approve=(
            "Approving publishes the proposal; in every agent's context a core policy wins "
            "over it, and it wins over a contradicting lesson (the lesson is left out, with "
            "the reason shown in the context preview)."
        ),
    ),
    "CONFLICT": VerdictText(
        label="Contradicts an existing skill",
        meaning=(
            "An existing org skill is for the same situation (condition overlap of at least "
            "50%) but advises something different (action overlap below 50%)."
        ),
        on_approve=(
            "Approving publishes the proposal and retracts the existing skill; rejecting "
            "keeps the existing skill and publishes nothing."
        ),
    ),
}
