"""Capture strategies: does an execution report become a proposer call, and which one?

Pure (no Django import). The company config's ``memory.procedural.capture`` picks one:

* ``failure`` — fires on ``failed`` and ``partial`` outcomes (the failure proposer);
* ``success`` — fires on ``succeeded`` only when ``quality_score ≥ min_quality_score`` **and**
  the score is at or above the ``success_quality_percentile`` of the agent's recent scores
  (the success proposer, lessons tagged ``success-derived``);
* ``hybrid`` — delegates by outcome: failed/partial → failure, succeeded → success.

The percentile is the nearest-rank percentile of the agent's ``percentile_window`` most
recent scored reports *before* this one; with no history the score only has to meet
``min_quality_score`` (a first excellent run is worth learning from).

:func:`initial_capture_status` is the cheap answer given at submit time (no history read):
``disabled``, ``not_applicable`` when the outcome or minimum score alone rule capture out,
else ``queued``. :func:`decide_capture` is the full decision the q2 task makes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

FAILURE_OUTCOMES = frozenset({"failed", "partial"})

Path = Literal["failure", "success"]


@dataclass(frozen=True)
class CaptureDecision:
    path: Path | None  # None: the strategy does not fire
    reason: str = ""

    @property
    def fires(self) -> bool:
        return self.path is not None


def _path_for(strategy: str, outcome: str) -> Path | None:
    is_failure = outcome in FAILURE_OUTCOMES
    if strategy == "failure":
        return "failure" if is_failure else None
    if strategy == "success":
        return "success" if outcome == "succeeded" else None
    if strategy == "hybrid":
        return "failure" if is_failure else "success"
    raise ValueError(f"unknown capture strategy {strategy!r}")


def nearest_rank_percentile(values: Sequence[float], percentile: float) -> float:
    """The smallest value such that at least ``percentile`` % of ``values`` are ≤ it."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(percentile / 100.0 * len(ordered)))
    return ordered[rank - 1]


def decide_capture(
    capture: Any, *, outcome: str, quality_score: float | None, recent_scores: Sequence[float]
) -> CaptureDecision:
    """The full decision for one report. ``capture`` is a ``CaptureConfig``."""
    path = _path_for(capture.type, outcome)
    if path is None:
        return CaptureDecision(None, f"capture strategy '{capture.type}' ignores {outcome}")
    if path == "failure":
        return CaptureDecision("failure")
    if quality_score is None:
        return CaptureDecision(None, "success capture needs a quality_score")
    if quality_score < capture.min_quality_score:
        return CaptureDecision(
            None,
            f"quality_score {quality_score:g} < min_quality_score {capture.min_quality_score:g}",
        )
    if recent_scores:
        threshold = nearest_rank_percentile(recent_scores, capture.success_quality_percentile)
        if quality_score < threshold:
            return CaptureDecision(
                None,
                f"quality_score {quality_score:g} below the agent's "
                f"p{capture.success_quality_percentile:g} ({threshold:g})",
            )
    return CaptureDecision("success")


def initial_capture_status(procedural: Any, *, outcome: str, quality_score: float | None) -> str:
    """``disabled`` | ``not_applicable`` | ``queued`` without reading history.

    ``procedural`` is a ``ProceduralMemoryConfig``.
    """
    if not procedural.enabled:
        return "disabled"
    decision = decide_capture(
        procedural.capture, outcome=outcome, quality_score=quality_score, recent_scores=()
    )
    return "queued" if decision.fires else "not_applicable"
