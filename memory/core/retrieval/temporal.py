"""Time-aware retrieval: a question's time anchor, "latest" questions, sessions (pure).

:func:`time_window` resolves the first time anchor of a question ("yesterday", "last
week", "in May 2023", "3 days ago", …) against the question's date into a half-open UTC
window ``[start, end)`` on ``created_at``; the search runs one more leg over the memories
inside it (``memory.retrieval.time_window_legs``). :func:`asks_latest` says whether a
question asks for the current state ("latest", "now", "currently", …) and
:func:`prefer_latest` re-scores fused candidates toward the newest
(``memory.retrieval.latest_boost``). :func:`spread_sessions` re-ranks fused candidates so
that one session does not fill the top (``memory.retrieval.session_spread``).

Measured per fold on both dev splits (``bench/fold_levers.py``; figures:
docs/benchmarks/retrieval.md#time-aware-levers).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

#: the longest window the time-window leg filters by: a longer one ("in 2023", "last year")
#: holds most of a store whose life is a year or two, and a leg over most of the store is
#: the dense leg counted twice (on LoCoMo dev, year windows lost two questions and gained
#: none: docs/benchmarks/retrieval.md#time-aware-levers)
LEG_WINDOW_MAX = timedelta(days=31)
#: memories further apart than this start a new session (:func:`spread_sessions`)
SESSION_GAP = timedelta(minutes=30)

_MONTHS = {name.lower(): index for index, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): index for index, name in enumerate(calendar.month_abbr) if name}
del _MONTHS["may"]  # re-added below without its ambiguous abbreviation rules
_MONTHS["may"] = 5
_MONTHS["sept"] = 9
_WEEKDAYS = {name.lower(): index for index, name in enumerate(calendar.day_name)}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a few": 3, "couple of": 2, "few": 3,
}  # fmt: skip

_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_NUMBER = r"(?P<n>\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + ")"

#: (pattern, kind), tried in order; the earliest match in the text wins
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b{_DAY} {_MONTH},? {_YEAR}\b", re.I), "date"),
    (re.compile(rf"\b{_MONTH} {_DAY},? {_YEAR}\b", re.I), "date"),
    (re.compile(rf"\b{_MONTH},? {_YEAR}\b", re.I), "month_year"),
    (re.compile(rf"\b(?:(?:in|during|of|early|late)\s+|mid-?\s*){_MONTH}\b(?!\s*\d)", re.I),
     "month"),
    (re.compile(rf"\b(?:in|during|of)\s+{_YEAR}\b", re.I), "year"),
    (re.compile(r"\byesterday\b", re.I), "yesterday"),
    (re.compile(r"\b(?:today|tonight|this morning|this afternoon|this evening)\b", re.I),
     "today"),
    (re.compile(r"\blast weekend\b", re.I), "last_weekend"),
    (re.compile(r"\b(?P<which>last|this|past) (?P<unit>week|month|year)\b", re.I), "calendar"),
    (re.compile(rf"\b{_NUMBER} (?P<unit>day|week|month|year)s? ago\b", re.I), "ago"),
    (re.compile(r"\blast (?P<weekday>" + "|".join(_WEEKDAYS) + r")\b", re.I), "weekday"),
]  # fmt: skip

_LATEST = re.compile(
    r"\b(latest|most recent(ly)?|current(ly)?|now|nowadays|these days|at the moment|"
    r"still|any ?more|newest|last time)\b",
    re.I,
)


@dataclass(frozen=True)
class TimeWindow:
    """``[start, end)`` in UTC and the words it was read from."""

    start: datetime
    end: datetime
    anchor: str

    @property
    def narrow(self) -> bool:
        """Narrow enough for the time-window leg (:data:`LEG_WINDOW_MAX`)."""
        return self.end - self.start <= LEG_WINDOW_MAX


def _day(moment: datetime) -> datetime:
    moment = moment.astimezone(UTC)
    return datetime(moment.year, moment.month, moment.day, tzinfo=UTC)


def _month(year: int, month: int, shift: int = 0) -> tuple[datetime, datetime]:
    index = year * 12 + (month - 1) + shift
    start = datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)
    after = index + 1
    return start, datetime(after // 12, after % 12 + 1, 1, tzinfo=UTC)


def _year(year: int) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)


def time_window(text: str, reference: datetime) -> TimeWindow | None:
    """The window of the first time anchor in ``text``, relative to ``reference`` (the
    question's date: "yesterday" is the UTC day before it); ``None`` without an anchor.

    Calendar units are whole calendar units ("last week" is the Monday-to-Monday week
    before ``reference``'s, "in May" the latest May that has begun by ``reference``);
    "the past week / month / year" is the trailing 7 / 30 / 365 days and ``reference``'s day;
    "N days ago" is that day ± 1 day, "N weeks ago" that day ± 3 days, "N months / years
    ago" the calendar month / year N back."""
    found: list[tuple[int, re.Match[str], str]] = []
    for pattern, kind in _PATTERNS:
        match = pattern.search(text)
        if match:
            found.append((match.start(), match, kind))
    for _, match, kind in sorted(found, key=lambda item: item[0]):
        window = _resolve(match, kind, reference)
        if window is not None:
            return TimeWindow(window[0], window[1], match.group(0))
    return None


def _resolve(  # noqa: C901 — one branch per anchor kind
    match: re.Match[str], kind: str, reference: datetime
) -> tuple[datetime, datetime] | None:
    today = _day(reference)
    groups = match.groupdict()
    if kind == "date":
        try:
            start = datetime(
                int(groups["year"]), _MONTHS[groups["month"].lower()], int(groups["day"]),
                tzinfo=UTC,
            )  # fmt: skip
        except ValueError:
            return None
        return start, start + timedelta(days=1)
    if kind == "month_year":
        return _month(int(groups["year"]), _MONTHS[groups["month"].lower()])
    if kind == "month":
        month = _MONTHS[groups["month"].lower()]
        year = today.year if month <= today.month else today.year - 1
        return _month(year, month)
    if kind == "year":
        return _year(int(groups["year"]))
    if kind == "yesterday":
        return today - timedelta(days=1), today
    if kind == "today":
        return today, today + timedelta(days=1)
    if kind == "last_weekend":
        # The latest Saturday–Sunday that ended before today.
        saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
        if saturday + timedelta(days=2) > today:
            saturday -= timedelta(days=7)
        return saturday, saturday + timedelta(days=2)
    if kind == "weekday":
        weekday = _WEEKDAYS[groups["weekday"].lower()]
        day = today - timedelta(days=(today.weekday() - weekday) % 7 or 7)
        return day, day + timedelta(days=1)
    unit = groups["unit"].lower()
    if kind == "calendar" and groups["which"].lower() == "past":
        # "the past week / month / year": the trailing span up to and including today
        span = {"week": 7, "month": 30, "year": 365}[unit]
        return today - timedelta(days=span), today + timedelta(days=1)
    if kind == "calendar":
        back = 0 if groups["which"].lower() == "this" else 1
        if unit == "week":
            monday = today - timedelta(days=today.weekday() + 7 * back)
            return monday, monday + timedelta(days=7)
        if unit == "month":
            return _month(today.year, today.month, -back)
        return _year(today.year - back)
    number = groups["n"].lower()
    count = int(number) if number.isdigit() else _NUMBERS[number]
    if unit == "day":
        day = today - timedelta(days=count)
        return day - timedelta(days=1), day + timedelta(days=2)
    if unit == "week":
        day = today - timedelta(days=7 * count)
        return day - timedelta(days=3), day + timedelta(days=4)
    if unit == "month":
        return _month(today.year, today.month, -count)
    return _year(today.year - count)


def asks_latest(text: str) -> bool:
    """Whether ``text`` asks for the current state of something ("latest", "now", …)."""
    return bool(_LATEST.search(text))


def prefer_latest(
    fused: Sequence[tuple[K, float]],
    created: Mapping[K, datetime],
    *,
    weight: float,
) -> list[tuple[K, float]]:
    """``fused`` (key, score) best first → re-scored best first: each candidate gains
    ``weight`` × the best score × its place in time among the candidates (the newest 1, the
    oldest 0); scores over 1 are rescaled so the best is 1.0; equal scores keep the order."""
    dated = [created[key] for key, _ in fused if key in created]
    if weight <= 0 or not fused or len(dated) < 2:
        return list(fused)
    oldest, newest = min(dated), max(dated)
    span = (newest - oldest).total_seconds()
    if span <= 0:
        return list(fused)
    top = fused[0][1]

    def place(key: K) -> float:
        return (created[key] - oldest).total_seconds() / span if key in created else 0.0

    scores = [(key, score + weight * top * place(key)) for key, score in fused]
    return _rescaled(scores)


def spread_sessions(
    fused: Sequence[tuple[K, float]],
    created: Mapping[K, datetime],
    *,
    weight: float,
    gap: timedelta = SESSION_GAP,
) -> list[tuple[K, float]]:
    """``fused`` best first → re-ranked greedily: a candidate's score is divided by
    1 + ``weight`` × the candidates already taken from its session (candidates no more than
    ``gap`` apart in ``created``, chained, are one session; an undated one is its own)."""
    if weight <= 0 or len(fused) < 2:
        return list(fused)
    session: dict[K, int] = {}
    previous: datetime | None = None
    number = 0
    for key in sorted((k for k, _ in fused if k in created), key=lambda k: created[k]):
        if previous is not None and created[key] - previous > gap:
            number += 1
        session[key] = number
        previous = created[key]
    taken: dict[int, int] = {}
    remaining = list(fused)
    out: list[tuple[K, float]] = []
    while remaining:
        best_index, best_score = 0, float("-inf")
        for index, (key, score) in enumerate(remaining):
            penalised = score / (1 + weight * taken.get(session.get(key, -1 - index), 0))
            if penalised > best_score:
                best_index, best_score = index, penalised
        key, _ = remaining.pop(best_index)
        if key in session:
            taken[session[key]] = taken.get(session[key], 0) + 1
        out.append((key, best_score))
    return out


def _rescaled(scores: list[tuple[K, float]]) -> list[tuple[K, float]]:
    scale = max(1.0, max(score for _, score in scores))
    order = {key: position for position, (key, _) in enumerate(scores)}
    scores.sort(key=lambda item: (-item[1], order[item[0]]))
    return [(key, score / scale) for key, score in scores]
