"""What a lesson or a skill advises, and the facts it stands on — as data (pure).

A lesson is not free text: it is a **situation** (task type, error category, failing tool,
outcome) and **directives** (``do`` / ``avoid`` one action), computed from the stored
execution reports. Its text is rendered from them, and its evidence sentence from the
reports' own fields (:class:`Evidence`), so every count, outcome, retry number, tool, agent,
task type and date a reader sees is the records' — whichever method wrote the wording.

What a report teaches (:func:`advice_for_report`):

==========================================  ================================================
the report                                   the advice
==========================================  ================================================
failed, later calls succeeded                do: run what finally succeeded
partial, a recovery reported                 do: the recovery (it got the task done, partly)
failed, a recovery reported                  avoid: the recovery (it did not fix it);
                                             do: change the failing step's inputs or escalate
failed, nothing else known                   avoid: retrying the failing step unchanged;
                                             do: change its inputs or escalate
succeeded                                    do: follow the tool order that worked
==========================================  ================================================

**Contradictions** (:func:`contradiction`): two entries contradict when their situations can
be the same (no field on which both are set and differ) and one says *do* an action the
other says to *avoid*. Actions are compared by their words (:func:`same_action`). Entries
written by people (core policies, hand-written procedures) have no stored directives; theirs
are read from the text (:func:`directives_from_text`: "Do not / Never / Avoid X" is avoid X,
"Always X" or a ``Do:`` line is do X).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

from synthorg.text import clip, fold

Stance = Literal["do", "avoid"]
FAILED_CALL = frozenset({"failed", "timeout"})
EXCERPT = 300

# kinds of action: where the directive's text came from
RECOVERY = "recovery"  # the agent's reported recovery, verbatim
SEQUENCE = "sequence"  # a tool order, ``a > b``
RETRY_UNCHANGED = "retry_unchanged"  # retrying the failing step unchanged
ESCALATE = "escalate"  # change the failing step's inputs or escalate
TEXT = "text"  # read from a person's text
OPERATOR = "operator"  # a person's structured skill: its action (do) or an avoid entry


@dataclass(frozen=True)
class Situation:
    """When the advice applies. Empty fields match anything."""

    task_type: str = ""
    error_category: str = ""
    tool: str = ""
    outcome: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "task_type": self.task_type,
            "error_category": self.error_category,
            "tool": self.tool,
            "outcome": self.outcome,
        }

    def compatible(self, other: Situation) -> bool:
        """Could both apply to one run? (task type, error category and tool agree where
        both are set; the outcome is what happened, not when the advice applies)."""
        for mine, theirs in (
            (self.task_type, other.task_type),
            (self.error_category, other.error_category),
            (self.tool, other.tool),
        ):
            if mine and theirs and mine.strip().lower() != theirs.strip().lower():
                return False
        return True


@dataclass(frozen=True)
class Directive:
    stance: Stance
    action: str
    kind: str = TEXT

    def as_dict(self) -> dict[str, str]:
        return {"stance": self.stance, "action": self.action, "kind": self.kind}

    def sentence(self) -> str:
        """How the directive reads in the ``Do:`` tier."""
        text = self.action.rstrip(".")
        if self.kind == RECOVERY:
            if self.stance == "avoid":
                return f"Do not repeat the recovery the agent reported (still failed): {text}."
            return f"Recover as the agent reported: {text}."
        if self.kind == SEQUENCE:
            text = f"run the tools in this order: {text}"
        if self.stance == "avoid":
            return f"Do not {text}."
        return f"{text[:1].upper()}{text[1:]}."


@dataclass(frozen=True)
class Advice:
    situation: Situation
    directives: tuple[Directive, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "situation": self.situation.as_dict(),
            "directives": [d.as_dict() for d in self.directives],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Advice | None:
        if not data or not isinstance(data, Mapping):
            return None
        raw = data.get("situation") or {}
        situation = Situation(**{k: str(raw.get(k) or "") for k in Situation.__annotations__})
        directives = tuple(
            Directive(stance=d["stance"], action=str(d["action"]), kind=str(d.get("kind", TEXT)))
            for d in data.get("directives") or []
            if isinstance(d, Mapping) and d.get("stance") in ("do", "avoid") and d.get("action")
        )
        return cls(situation, directives)

    @property
    def signature(self) -> tuple:
        """What two pieces of advice share when they advise the same thing."""
        return tuple(sorted((d.stance, d.kind, _norm(d.action)) for d in self.directives))


# --- what a report teaches ------------------------------------------------------------------


def tool_calls(report: Mapping[str, Any]) -> list[dict]:
    return [
        dict(c)
        for c in report.get("tool_calls") or []
        if isinstance(c, Mapping) and str(c.get("name") or "").strip()
    ]


def _distinct(values: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for value in values:
        if value and value not in seen:
            seen.append(value)
    return seen


def failing_call(calls: Sequence[Mapping[str, Any]]) -> tuple[int | None, Mapping | None]:
    """The last call that failed or timed out (the one the run ended on), with its index."""
    for index in range(len(calls) - 1, -1, -1):
        if calls[index].get("status") in FAILED_CALL:
            return index, calls[index]
    return None, None


def worked_after_failure(report: Mapping[str, Any]) -> list[str]:
    calls = tool_calls(report)
    index, _ = failing_call(calls)
    after = calls[index + 1 :] if index is not None else []
    return _distinct(str(c["name"]) for c in after if c.get("status") == "succeeded")


def situation_of(report: Mapping[str, Any]) -> Situation:
    calls = tool_calls(report)
    _, failing = failing_call(calls)
    success = report.get("outcome") == "succeeded"
    return Situation(
        task_type=str(report.get("task_type") or "").strip(),
        error_category="" if success else str(report.get("error_category") or "").strip(),
        tool="" if success or failing is None else str(failing["name"]).strip(),
        outcome=str(report.get("outcome") or "").strip(),
    )


def advice_for_report(report: Mapping[str, Any]) -> Advice:
    """The advice a report's own fields support (see the module's table)."""
    situation = situation_of(report)
    if situation.outcome == "succeeded":
        order = _distinct(
            str(c["name"]) for c in tool_calls(report) if c.get("status") == "succeeded"
        )
        if not order:
            return Advice(situation)
        return Advice(situation, (Directive("do", " > ".join(order), SEQUENCE),))
    subject = f"`{situation.tool}`" if situation.tool else "the failing step"
    escalate = Directive("do", f"change {subject}'s inputs or escalate", ESCALATE)
    worked = worked_after_failure(report)
    recovery = clip(str(report.get("recovery") or ""), EXCERPT)
    if worked:
        return Advice(situation, (Directive("do", " > ".join(worked), SEQUENCE),))
    if recovery and situation.outcome == "partial":
        return Advice(situation, (Directive("do", recovery, RECOVERY),))
    if recovery:
        return Advice(situation, (Directive("avoid", recovery, RECOVERY), escalate))
    retry = Directive("avoid", f"retry {subject} unchanged", RETRY_UNCHANGED)
    return Advice(situation, (retry, escalate))


def majority_advice(advices: Sequence[Advice]) -> tuple[Advice, int]:
    """The advice most reports support (ties: the earliest) and how many support it."""
    counts = Counter(a.signature for a in advices)
    top = max(counts.values())
    chosen = next(a for a in advices if counts[a.signature] == top)
    return chosen, top


# --- the facts, from the records --------------------------------------------------------------


def _day(value: Any) -> str:
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str) and len(value) >= 10:
        return value[:10]
    return ""


@dataclass(frozen=True)
class Evidence:
    """Counts and names computed from the reports themselves; the only source of every
    fact a lesson, draft or approval item states."""

    reports: int
    outcomes: dict[str, int]
    retries: tuple[int, ...]
    task_types: tuple[str, ...]
    error_categories: tuple[str, ...]
    tools: tuple[str, ...]
    agents: tuple[str, ...] = ()
    first_day: str = ""
    last_day: str = ""
    recoveries: tuple[str, ...] = field(default=())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        def names(key: str) -> tuple[str, ...]:
            return tuple(str(v) for v in data.get(key) or [])

        return cls(
            reports=int(data.get("reports") or 0),
            outcomes={str(k): int(v) for k, v in (data.get("outcomes") or {}).items()},
            retries=tuple(int(v) for v in data.get("retries") or []),
            task_types=names("task_types"),
            error_categories=names("error_categories"),
            tools=names("tools"),
            agents=names("agents"),
            first_day=str(data.get("first_day") or ""),
            last_day=str(data.get("last_day") or ""),
            recoveries=names("recoveries"),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "reports": self.reports,
            "outcomes": dict(self.outcomes),
            "retries": list(self.retries),
            "task_types": list(self.task_types),
            "error_categories": list(self.error_categories),
            "tools": list(self.tools),
            "agents": list(self.agents),
            "first_day": self.first_day,
            "last_day": self.last_day,
            "recoveries": list(self.recoveries),
        }


def evidence_of(
    reports: Sequence[Mapping[str, Any]], *, agent_names: Mapping[Any, str] | None = None
) -> Evidence:
    """``reports``: the reports' fields (``outcome``, ``retry_count``, ``task_type``,
    ``error_category``, ``tool_calls``, ``recovery``, optionally ``agent_id`` / ``agent``
    and ``created_at``)."""
    names = agent_names or {}
    outcomes = Counter(str(r.get("outcome") or "") for r in reports)
    days = sorted(filter(None, (_day(r.get("created_at")) for r in reports)))
    agents = _distinct(
        str(r.get("agent") or names.get(r.get("agent_id"), "") or "") for r in reports
    )
    return Evidence(
        reports=len(reports),
        outcomes={k: outcomes[k] for k in ("failed", "partial", "succeeded") if outcomes[k]},
        retries=tuple(int(r.get("retry_count") or 0) for r in reports),
        task_types=tuple(_distinct(str(r.get("task_type") or "") for r in reports)),
        error_categories=tuple(
            _distinct(
                str(r.get("error_category") or "")
                for r in reports
                if r.get("outcome") != "succeeded"
            )
        ),
        tools=tuple(_distinct(situation_of(r).tool for r in reports)),
        agents=tuple(sorted(agents)),
        first_day=days[0] if days else "",
        last_day=days[-1] if days else "",
        recoveries=tuple(_distinct(clip(str(r.get("recovery") or ""), EXCERPT) for r in reports)),
    )


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _quoted(values: Sequence[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def render_evidence(evidence: Evidence) -> str:
    """One sentence of facts, every one computed from the records."""
    outcomes = ", ".join(f"{n} {name}" for name, n in evidence.outcomes.items())
    text = f"Evidence: {_count(evidence.reports, 'execution report', 'execution reports')}"
    if evidence.agents:
        agents = _count(len(evidence.agents), "agent", "agents")
        text += f" of {agents} ({', '.join(evidence.agents)})"
    text += f" ({outcomes})" if outcomes else ""
    if evidence.task_types:
        text += f"; task type {_quoted(evidence.task_types)}"
    if evidence.error_categories:
        text += f"; error category {_quoted(evidence.error_categories)}"
    if evidence.tools:
        text += f"; failing tool {', '.join(f'`{t}`' for t in evidence.tools)}"
    retries = sorted(set(evidence.retries))
    if len(retries) == 1:
        each = " each" if evidence.reports > 1 else ""
        text += f"; {_count(retries[0], 'retry', 'retries')}{each}"
    elif retries:
        text += f"; {retries[0]} to {retries[-1]} retries"
    if evidence.first_day:
        span = evidence.first_day
        if evidence.last_day != evidence.first_day:
            span += f" to {evidence.last_day}"
        text += f"; reported {span}"
    return text + "."


# --- comparing actions and finding contradictions --------------------------------------------

_WORD = re.compile(r"[a-z0-9][a-z0-9_\-.]*[a-z0-9]|[a-z0-9]")
STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "the",
        "then",
        "to",
        "of",
        "in",
        "on",
        "for",
        "with",
        "by",
        "at",
        "as",
        "or",
        "it",
        "its",
        "is",
        "are",
        "be",
        "was",
        "were",
        "this",
        "that",
        "these",
        "those",
        "what",
        "which",
        "who",
        "when",
        "where",
        "how",
        "do",
        "does",
        "did",
        "not",
        "no",
        "never",
        "avoid",
        "always",
        "must",
        "should",
        "you",
        "your",
        "agent",
        "agents",
        "reported",
        "report",
        "recovery",
        "run",
        "tools",
        "order",
        "task",
        "tasks",
        "step",
        "steps",
        "into",
        "from",
        "than",
        "same",
        "every",
        "any",
        "all",
        "each",
        "again",
        "after",
        "before",
        "once",
    )
)
ACTION_OVERLAP = 0.5
ACTION_COVERAGE = 0.8


def action_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in STOPWORDS)


def _norm(text: str) -> str:
    return " ".join(sorted(action_words(text)))


def same_action(a: str, b: str) -> bool:
    """Do the two texts name the same action? (word-set Jaccard ≥ 0.5, or the shorter one's
    words ≥ 80 % inside the longer one, with at least two content words)."""
    left, right = action_words(a), action_words(b)
    if not left or not right:
        return False
    shared = len(left & right)
    if shared / len(left | right) >= ACTION_OVERLAP:
        return True
    shorter = min(len(left), len(right))
    return shorter >= 2 and shared / shorter >= ACTION_COVERAGE


@dataclass(frozen=True)
class Clash:
    """Why two entries contradict: what one says to do and the other to avoid."""

    do: str
    avoid: str

    def reason(self) -> str:
        return f"one says to do '{fold(self.do)}', the other to avoid it"


def contradiction(a: Advice, b: Advice) -> Clash | None:
    if not a.situation.compatible(b.situation):
        return None
    for mine in a.directives:
        for theirs in b.directives:
            if mine.stance == theirs.stance or not same_action(mine.action, theirs.action):
                continue
            do, avoid = (mine, theirs) if mine.stance == "do" else (theirs, mine)
            return Clash(do=do.action, avoid=avoid.action)
    return None


_AVOID = re.compile(
    r"^(?:do not|don't|never|avoid|must not|should not|stop)\s+(?:repeat(?:ing)?\s+)?(.+)$",
    re.IGNORECASE,
)
_DO = re.compile(r"^(?:always|must|do)\s+(.+)$", re.IGNORECASE)
_LABEL = re.compile(r"^(?:do|avoid|don't)\s*:\s*", re.IGNORECASE)
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")


def directives_from_text(text: str) -> tuple[Directive, ...]:
    """Directives a person's text states: each sentence (or ``Do:`` line) that starts with
    a negation (avoid) or with "always"/"must"/"do" (do). Other sentences state nothing.
    A ``Do:`` / ``Avoid:`` label marks its sentences as advice."""
    found: list[Directive] = []
    for line in str(text).splitlines():
        line = _BULLET.sub("", line.strip())
        labelled = _LABEL.match(line)
        stance_of_label = None
        if labelled:
            stance_of_label = "avoid" if labelled.group(0).lower().startswith("avoid") else "do"
            line = line[labelled.end() :]
        for sentence in _SENTENCES.split(line):
            sentence = sentence.strip().rstrip(".;!")
            if not sentence:
                continue
            avoid = _AVOID.match(sentence)
            if avoid:
                found.append(Directive("avoid", avoid.group(1), TEXT))
                continue
            do = _DO.match(sentence)
            if do:
                found.append(Directive("do", do.group(1), TEXT))
            elif stance_of_label:
                found.append(Directive(stance_of_label, sentence, TEXT))
    return tuple(found)


def advice_from_text(text: str) -> Advice:
    """A person's entry (core policy, hand-written procedure): situation unknown (matches
    every situation), directives read from its text."""
    return Advice(Situation(), directives_from_text(text))
