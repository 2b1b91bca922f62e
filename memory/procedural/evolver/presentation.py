"""How the skill evolver's approval items are presented, edited and timed (registered beside
their appliers in ``EvolverConfig.ready``; :mod:`orgmemory.approval_presenters`).

A proposal's editable parts are its tiers — discovery, condition, action, rationale and the
execution steps (one per line) — with the limits below; the item waits 7 days for a
decision; its page renders the tiers, the evidence, the verdict in plain language and, side
by side with the proposal, what it replaces or contradicts
(``console/procedural/_skill_proposal.html``). The lesson proposals for the org skill pool
(:mod:`memory.procedural.services.org_pool_proposals`) are presented the same way.
"""

from __future__ import annotations

from datetime import timedelta
from types import MappingProxyType

from memory.procedural.evolver.supersession import Verdict
from orgmemory.approval_presenters import ApprovalPresenter, EditableField, VerdictText

PROPOSAL_TTL = timedelta(days=7)
MAX_STEPS = 20
STEP_MAX_CHARS = 500
SKILL_TEMPLATE = "console/procedural/_skill_proposal.html"

#: the tiers an approver may edit before approving, and their limits
SKILL_FIELDS: tuple[EditableField, ...] = (
    EditableField("discovery", "Discovery", 600),
    EditableField("condition", "Condition", 2000),
    EditableField("action", "Action", 2000),
    EditableField("rationale", "Rationale", 2000),
    EditableField(
        "execution_steps",
        "Steps",
        STEP_MAX_CHARS,
        many=True,
        max_items=MAX_STEPS,
        hint="one per line",
    ),
)

#: what a supersession verdict (stored as ``evidence["verdict"]``) means for the human deciding
VERDICTS = MappingProxyType(
    {
        Verdict.FULL.value: VerdictText(
            label="Replaces an existing skill",
            meaning=(
                "The proposal covers at least 80% of an existing org skill's situation, gives "
                "similar advice and has a higher confidence."
            ),
            on_approve="Approving publishes the proposal and retracts the skill it replaces.",
        ),
        Verdict.PARTIAL.value: VerdictText(
            label="Adds a skill beside the existing ones",
            meaning=(
                "No existing org skill covers the same situation closely enough to be replaced "
                "(or none exists yet)."
            ),
            on_approve="Approving publishes the proposal; every existing skill stays as it is.",
        ),
        Verdict.CONTRADICTS.value: VerdictText(
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
        Verdict.CONFLICT.value: VerdictText(
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
)


def skill_presenter(*, approve_hint: str) -> ApprovalPresenter:
    """A skill proposal's presenter (the evolver's and the lesson pool's)."""
    return ApprovalPresenter(
        editable=SKILL_FIELDS,
        stale_on_edit=("content",),  # a rendering of the tiers; the applier renders again
        ttl=PROPOSAL_TTL,
        verdicts=VERDICTS,
        template=SKILL_TEMPLATE,
        approve_hint=approve_hint,
    )


EVOLVER_PRESENTER = skill_presenter(
    approve_hint=(
        "Approving publishes the skill as an org procedure, by the system on your behalf, with "
        "the text below as you leave it (your edits are recorded as a diff)."
    )
)
