"""The deterministic half of the hierarchical retriever (pure: no Django import).

The supervisor of ``retriever: hierarchical`` (seed 003) routes a query to *workers*, each
searching one kind of memory, merges their ranked lists and, with ``reflective_retry_enabled``,
judges the result and retries with a corrected query. With an LLM the routing and the
judgement are the model's (:mod:`memory.prompting.hierarchical`); this module is what runs
without one, and what the LLM path falls back to when the model fails:

* :func:`route_by_hints` — the workers whose categories the request names come first; else
  the workers whose cue words the query contains (``how do I`` → procedural, ``when`` /
  ``yesterday`` → episodic); then the rest in :data:`WORKER_ORDER`; at most
  ``max_workers`` of them.
* :func:`judge_by_score` — poor when nothing came back or the best cosine similarity of the
  merged hits is below :data:`RETRY_MIN_SIMILARITY` (with no dense score at all, e.g. the
  embedder failed, only an empty result is poor).
* :func:`corrections` — the corrected queries tried in turn: the query's content words
  alone (question words and stop words dropped), then its longest content words one by one.
* :func:`merge_ranked` — Reciprocal Rank Fusion of every worker list of every attempt.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Sequence

from synthorg.enums import MemoryCategory
from synthorg.retrieval.fusion import rrf_fuse

SEMANTIC = "semantic"
EPISODIC = "episodic"
PROCEDURAL = "procedural"

#: Each worker's memory categories; together they cover every category.
WORKERS: dict[str, tuple[MemoryCategory, ...]] = {
    SEMANTIC: (MemoryCategory.SEMANTIC, MemoryCategory.SOCIAL),
    EPISODIC: (MemoryCategory.EPISODIC, MemoryCategory.WORKING),
    PROCEDURAL: (MemoryCategory.PROCEDURAL,),
}
#: The order of workers no hint distinguishes.
WORKER_ORDER = (SEMANTIC, EPISODIC, PROCEDURAL)

#: Cue words (lower-case, whole words or phrases) that hint a worker.
HINTS: dict[str, tuple[str, ...]] = {
    PROCEDURAL: (
        "how do", "how to", "how should", "steps", "step", "procedure", "process", "playbook",
        "runbook", "workflow", "checklist", "instructions", "best way", "approach",
    ),
    EPISODIC: (
        "when", "yesterday", "today", "last week", "last time", "last month", "ago", "happened",
        "did", "was", "were", "earlier", "recently", "session", "meeting", "date",
    ),
    SEMANTIC: (
        "what is", "what are", "who is", "define", "definition", "fact", "policy", "prefer",
        "preference", "likes", "favourite", "favorite", "name of",
    ),
}  # fmt: skip

#: Below this best cosine similarity the merged result is judged poor (all-MiniLM-L6-v2:
#: paraphrases score ~0.5–0.8, unrelated sentences ~0.0–0.2).
RETRY_MIN_SIMILARITY = 0.35

_STOP_WORDS_TEXT = """a about an and any are as at be been but by can could did do does for from had
has have he her his how i if in into is it its me my of on or our she should so that the their
them they this to us was we were what when where which who whom why will with would you your
tell know remember"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_WORD = re.compile(r"[\w'-]+", re.UNICODE)


def route_by_hints(
    text: str, *, categories: Iterable[MemoryCategory] = (), max_workers: int
) -> list[str]:
    """The workers to run for ``text``, best first, at most ``max_workers`` (see module)."""
    if max_workers < 1:
        raise ValueError("max_workers must be at least 1")
    requested = set(categories)
    if requested:
        eligible = [w for w in WORKER_ORDER if requested & set(WORKERS[w])]
        return eligible[:max_workers]
    lowered = " " + " ".join(_WORD.findall(text.lower())) + " "
    hinted = {w: sum(f" {cue} " in lowered for cue in HINTS[w]) for w in WORKER_ORDER}
    ordered = sorted(WORKER_ORDER, key=lambda w: (-hinted[w], WORKER_ORDER.index(w)))
    return ordered[:max_workers]


def worker_categories(
    worker: str, requested: Iterable[MemoryCategory] = ()
) -> tuple[MemoryCategory, ...]:
    """The categories ``worker`` searches, narrowed to ``requested`` when the request names
    some."""
    own = WORKERS[worker]
    requested = tuple(requested)
    return tuple(c for c in own if c in requested) if requested else own


def judge_by_score(similarities: Sequence[float | None]) -> bool:
    """True when the result is good enough: something came back and, when any hit has a
    cosine similarity, the best one reaches :data:`RETRY_MIN_SIMILARITY`."""
    if not similarities:
        return False
    known = [s for s in similarities if s is not None]
    return not known or max(known) >= RETRY_MIN_SIMILARITY


def content_words(text: str) -> list[str]:
    """``text``'s words without stop words, in order, each once."""
    words = [w.strip("'-") for w in _WORD.findall(text)]
    return list(dict.fromkeys(w for w in words if w and w.lower() not in STOP_WORDS))


def corrections(text: str) -> list[str]:
    """The corrected queries to try after ``text`` (see module), none equal to ``text``."""
    words = content_words(text)
    candidates = [" ".join(words)] if len(words) > 1 else []
    candidates += sorted(words, key=lambda w: (-len(w), words.index(w)))
    seen = {text.strip().lower()}
    out = []
    for candidate in candidates:
        if candidate and candidate.lower() not in seen:
            seen.add(candidate.lower())
            out.append(candidate)
    return out


def merge_ranked(lists: Sequence[Sequence[Hashable]], *, k: int) -> list[tuple[Hashable, float]]:
    """One ranking from the workers' lists of every attempt (RRF, min-max normalised)."""
    return rrf_fuse([list(ranked) for ranked in lists if ranked], k=k)
