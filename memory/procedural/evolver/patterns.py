"""Grouping execution trajectories into patterns and scoring them (pure: no Django import).

A trajectory is one execution report, reduced to what grouping needs. Patterns:

* ``failure:<error category>`` — failed or partial runs that reported that error category.
* ``success:<tool>><tool>…`` — succeeded runs with exactly that tool-call sequence.

**Confidence** (proportional to the failure rate, as the seed asks):

* failure pattern: ``confidence = F / N`` where ``F`` is the number of failed/partial
  reports with that error category and ``N`` the number of all reports in the window of the
  same task types as those ``F`` (a report without a task type counts as type ``""``). It is
  the rate at which that kind of task fails this way: 1.0 when every such run failed so.
* success pattern: ``confidence = S / M`` where ``S`` is the number of succeeded reports with
  that tool sequence and ``M`` every report (any outcome) with the same sequence — the
  failure rate's complement for that way of working.

A pattern is *eligible* when at least ``min_agents`` distinct agents produced it and its
confidence is ≥ ``min_confidence``; eligible patterns are ranked by confidence, then by the
number of agents and reports, then by key (deterministic), and cut to ``max_proposals``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

FAILURE_OUTCOMES = frozenset({"failed", "partial"})
SEQUENCE_SEPARATOR = ">"
KEY_MAX = 200


@dataclass(frozen=True)
class Trajectory:
    report_id: str
    agent_id: int
    outcome: str
    task_type: str = ""
    error_category: str = ""
    tool_names: tuple[str, ...] = ()


@dataclass
class Pattern:
    key: str
    kind: str  # "failure" | "success"
    reports: list[Trajectory] = field(default_factory=list)
    population: int = 0  # N (failure) or M (success) of the confidence formula

    @property
    def agent_ids(self) -> list[int]:
        return sorted({t.agent_id for t in self.reports})

    @property
    def report_ids(self) -> list[str]:
        return [t.report_id for t in self.reports]

    @property
    def rate(self) -> float:
        return len(self.reports) / self.population if self.population else 0.0

    @property
    def confidence(self) -> float:
        return round(self.rate, 4)


def failure_key(error_category: str) -> str:
    return f"failure:{error_category.strip().lower()}"[:KEY_MAX]


def success_key(tool_names: Sequence[str]) -> str:
    return ("success:" + SEQUENCE_SEPARATOR.join(tool_names))[:KEY_MAX]


def group_trajectories(trajectories: Iterable[Trajectory]) -> list[Pattern]:
    """Every pattern of the window with its population (see the module docstring)."""
    items = list(trajectories)
    by_type: dict[str, int] = defaultdict(int)
    by_sequence: dict[tuple[str, ...], int] = defaultdict(int)
    for t in items:
        by_type[t.task_type] += 1
        if t.tool_names:
            by_sequence[t.tool_names] += 1
    patterns: dict[str, Pattern] = {}
    failure_types: dict[str, set[str]] = defaultdict(set)
    for t in items:
        if t.outcome in FAILURE_OUTCOMES and t.error_category.strip():
            key = failure_key(t.error_category)
            patterns.setdefault(key, Pattern(key=key, kind="failure")).reports.append(t)
            failure_types[key].add(t.task_type)
        elif t.outcome == "succeeded" and t.tool_names:
            key = success_key(t.tool_names)
            pattern = patterns.setdefault(key, Pattern(key=key, kind="success"))
            pattern.reports.append(t)
            pattern.population = by_sequence[t.tool_names]
    for key, types in failure_types.items():
        patterns[key].population = sum(by_type[task_type] for task_type in types)
    return sorted(patterns.values(), key=lambda p: p.key)


def eligible_patterns(
    patterns: Iterable[Pattern],
    *,
    min_agents: int,
    min_confidence: float,
    max_proposals: int,
) -> list[Pattern]:
    keep = [
        p for p in patterns if len(p.agent_ids) >= min_agents and p.confidence >= min_confidence
    ]
    keep.sort(key=lambda p: (-p.confidence, -len(p.agent_ids), -len(p.reports), p.key))
    return keep[:max_proposals]
