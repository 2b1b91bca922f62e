"""Cross-agent propagation: which peers receive a copy of an accepted lesson (pure).

``none`` (the default) keeps lessons agent-local; ``role`` sends them to active agents with
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
    if strategy == "none" or max_targets <= 0:
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
