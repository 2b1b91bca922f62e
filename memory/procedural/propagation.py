"""Cross-agent propagation: which peers receive a copy of an accepted lesson (pure).

A lesson's ``scope`` bounded by the company strategy (:func:`scope_decision`) names the peer
set: ``agent`` keeps lessons agent-local; ``role`` sends them to active agents with
the same (non-blank) role, ``department`` to those in the same (non-blank) department. The
source agent is always excluded, and so is any peer whose memory level is ``none`` (it
stores nothing). At most ``max_targets`` peers receive a copy, chosen by id order so the
choice is stable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Peer:
    id: int
    role: str
    department: str
    memory_level: str
    is_active: bool = True


def propagation_targets(
    strategy: str, *, source: Peer, candidates: Iterable[Peer], max_targets: int
) -> list[Peer]:
    if strategy in ("none", "agent") or max_targets <= 0:  # "agent": a private lesson
        return []
    if strategy not in ("role", "department"):
        raise ValueError(f"unknown propagation strategy {strategy!r}")
    key = getattr(source, strategy)
    if not key.strip():
        return []
    eligible = sorted(
        (
            peer
            for peer in candidates
            if peer.id != source.id
            and peer.is_active
            and peer.memory_level != "none"
            and getattr(peer, strategy) == key
        ),
        key=lambda peer: peer.id,
    )
    return eligible[:max_targets]


#: Lesson scopes from narrowest to widest (the seed's ``ProceduralMemoryScope``).
SCOPES = ("agent", "role", "department", "org")
#: The widest peer scope each company propagation strategy allows.
STRATEGY_BOUND = {"none": "agent", "role": "role", "department": "department"}


@dataclass(frozen=True)
class ScopeDecision:
    """Who a lesson reaches. ``effective`` is the peer scope it is delivered at now (``agent``:
    nobody but its author); ``narrowed`` says the requested scope was cut; ``org_proposal``
    that the lesson is proposed to the org skill pool (a human approves or rejects it)."""

    requested: str
    effective: str
    narrowed: bool = False
    org_proposal: bool = False
    why: str = ""

    @property
    def note(self) -> str:
        """What the capture record and the console say about the scope ("" when nothing to
        say: delivered as requested)."""
        if self.org_proposal:
            reach = "its author only" if self.effective == "agent" else f"{self.effective} peers"
            return f"scope org: proposed to the org skill pool; until approved it reaches {reach}"
        if self.narrowed:
            return f"scope {self.requested} narrowed to {self.effective}: {self.why}"
        return ""


def scope_decision(requested: str, strategy: str, *, org_pool: bool = True) -> ScopeDecision:
    """Combine a lesson's ``requested`` scope with the company's propagation ``strategy``.

    The strategy is a bound, never a widening: a lesson is delivered at the narrower of its
    own scope and the strategy's (:data:`STRATEGY_BOUND`, order :data:`SCOPES`), and a cut is
    reported (``narrowed``). An ``agent`` lesson stays private whatever the strategy. ``org``
    is never written to the org pool by an agent: it is delivered at the strategy's bound
    like any other scope and becomes a proposal to the org skill pool that a human approves
    or rejects — unless the company has no pool (``org_pool`` false: shared knowledge is
    disabled), which narrows it like any other cut.
    """
    if strategy not in STRATEGY_BOUND:
        raise ValueError(f"unknown propagation strategy {strategy!r}")
    if requested not in SCOPES:
        raise ValueError(f"unknown lesson scope {requested!r}")
    bound = STRATEGY_BOUND[strategy]
    effective = min(requested, bound, key=SCOPES.index)
    if requested == "org" and org_pool:
        return ScopeDecision(requested=requested, effective=effective, org_proposal=True)
    if effective == requested:
        return ScopeDecision(requested=requested, effective=effective)
    if requested == "org" and not org_pool:
        why = (
            "the company has no org skill pool (memory.options.shared_knowledge_base is off) "
            f"and its propagation strategy is {strategy}"
        )
    else:
        why = f"the company's propagation strategy is {strategy}"
    return ScopeDecision(requested=requested, effective=effective, narrowed=True, why=why)


def strategy_scope(strategy: str) -> str:
    """The scope a lesson takes when nothing judged its reach (a rule lesson, no LLM): the
    widest the company's strategy allows, which is what propagation did before scopes."""
    return STRATEGY_BOUND[strategy]
