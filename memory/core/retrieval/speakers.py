"""Speaker feature: a question about someone ranks what that someone said higher.

A conversation turn stored as a memory carries its speaker as the tag ``speaker:<name>``
(:func:`speaker_tag`; verbatim ingestion and the benchmarks set it). A query *names* a
speaker when the name occurs in it as words (case-insensitive), and — for the roles of a
chat with an assistant — when it is in the first person (``user``: "what did I …") or the
second person (``assistant``: "you told me …"). Every fused candidate spoken by a named
speaker gains ``weight`` × the best fused score; scores over 1 are rescaled so the best is
1.0, and equal scores keep the fused order.

Chosen on both dev splits (``bench/multisession_levers.py``, lever ``speaker``; measured:
docs/benchmarks/retrieval.md#multi-session-levers): LoCoMo's questions name the person ("When
did Caroline …"), LongMemEval's are the user's ("How many … did I …"), and in both the
evidence is mostly that speaker's own turns.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

SPEAKER_TAG_PREFIX = "speaker:"
TAG_MAX_CHARS = 64
USER = "user"
ASSISTANT = "assistant"
_FIRST_PERSON = re.compile(r"\b(i|my|me|mine|myself)\b", re.I)
_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself)\b", re.I)


def speaker_tag(name: str) -> str:
    """The tag that says who spoke a memory (``speaker:`` + the name, spaces collapsed,
    lower-cased, cut to the tag length)."""
    return (SPEAKER_TAG_PREFIX + " ".join(name.split()).lower())[:TAG_MAX_CHARS]


def speakers_of(tags: Iterable[str]) -> set[str]:
    return {t[len(SPEAKER_TAG_PREFIX) :] for t in tags if t.startswith(SPEAKER_TAG_PREFIX)}


def named_speakers(query: str, names: Iterable[str]) -> set[str]:
    """The ``names`` (lower-case) that ``query`` is about."""
    named = set()
    for name in names:
        as_word = bool(name) and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", query, re.I)
        as_role = (name == USER and _FIRST_PERSON.search(query)) or (
            name == ASSISTANT and _SECOND_PERSON.search(query)
        )
        if as_word or as_role:
            named.add(name)
    return named


def boost_speakers(
    fused: Sequence[tuple[K, float]],
    tags: Mapping[K, Sequence[str]],
    *,
    query: str,
    weight: float,
) -> list[tuple[K, float]]:
    """``fused`` (key, score) best first → re-scored best first; ``tags``: each candidate's
    tags (a key absent from it has none)."""
    if weight <= 0 or not fused:
        return list(fused)
    spoken = {key: speakers_of(tags.get(key, ())) for key, _ in fused}
    wanted = named_speakers(query, set().union(*spoken.values()))
    if not wanted:
        return list(fused)
    top = fused[0][1]
    scores = [
        (key, score + (weight * top if spoken[key] & wanted else 0.0)) for key, score in fused
    ]
    scale = max(1.0, max(score for _, score in scores))
    order = {key: position for position, (key, _) in enumerate(scores)}
    scores.sort(key=lambda item: (-item[1], order[item[0]]))
    return [(key, score / scale) for key, score in scores]
