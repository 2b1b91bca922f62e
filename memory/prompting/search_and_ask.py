"""The Search-and-Ask loop of the tool-based strategy (pure: no Django import).

retrieve → ask whether the results suffice → if not, reformulate the query → retrieve again,
for at most ``max_rounds`` reformulations. Results of every round are merged by key keeping
the best score of each. A failing checker, reformulator or later retrieval ends the loop with
what was found so far and names the failed step in ``degraded``; only the first retrieval's
failure propagates (there is nothing to return without it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

MAX_ROUNDS = 5

Hit = TypeVar("Hit")


class StepFailed(Exception):
    """A checker, reformulator or retrieval step could not produce an answer. ``code``, when
    set, is added to ``degraded`` after the step's name (e.g. ``llm_budget_exceeded``)."""

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class SearchAndAskOutcome(Generic[Hit]):
    hits: list[Hit]
    queries: list[str]  # the original query first, then each reformulation
    sufficient: bool | None  # the checker's last verdict (None: never asked or failed)
    degraded: list[str] = field(default_factory=list)


def search_and_ask(
    query: str,
    *,
    retrieve: Callable[[str], Sequence[Hit]],
    is_sufficient: Callable[[str, Sequence[Hit]], bool],
    reformulate: Callable[[str, Sequence[str], Sequence[Hit]], str],
    key: Callable[[Hit], Hashable],
    score: Callable[[Hit], float],
    max_rounds: int,
    limit: int,
) -> SearchAndAskOutcome[Hit]:
    if not 1 <= max_rounds <= MAX_ROUNDS:
        raise ValueError(f"max_rounds must be between 1 and {MAX_ROUNDS}")
    best: dict[Hashable, Hit] = {}

    def merge(hits: Sequence[Hit]) -> None:
        for hit in hits:
            current = best.get(key(hit))
            if current is None or score(hit) > score(current):
                best[key(hit)] = hit

    def ranked() -> list[Hit]:
        return sorted(best.values(), key=lambda hit: -score(hit))[:limit]

    queries = [query]
    merge(retrieve(query))
    sufficient: bool | None = None
    degraded: list[str] = []
    for _round in range(max_rounds):
        try:
            sufficient = bool(is_sufficient(query, ranked()))
        except StepFailed as exc:
            sufficient = None
            _failed(degraded, "sufficiency_check", exc)
            break
        if sufficient:
            break
        try:
            new_query = reformulate(query, list(queries), ranked()).strip()
        except StepFailed as exc:
            _failed(degraded, "reformulation", exc)
            break
        if not new_query or new_query in queries:
            break  # nothing new to ask
        queries.append(new_query)
        try:
            merge(retrieve(new_query))
        except StepFailed as exc:
            _failed(degraded, "retrieval", exc)
            break
    return SearchAndAskOutcome(ranked(), queries, sufficient, degraded)


def _failed(degraded: list[str], step: str, exc: StepFailed) -> None:
    degraded.append(step)
    if exc.code and exc.code not in degraded:
        degraded.append(exc.code)
