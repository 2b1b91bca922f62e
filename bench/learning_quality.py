"""Learning quality on real failure logs: are the lessons (and skills) the product learns right?

Reads Who&When-format failure logs (``--data``, e.g. ``../shared/bench-data/who_and_when_dev.json``;
read in place, never copied) and runs them through the product's own learning half on a
throw-away database (``bench/scratch_db.py``)::

    python bench/learning_quality.py --data PATH --method rule|standin|llm --out PATH [--limit N]

``--method``: ``rule`` (no LLM configured: the deterministic rule lessons and rule drafts),
``standin`` (the demo's stand-in model, :mod:`memory.interfaces.demo_llm`, started in-process
on a loopback port: the LLM paths answered by the deterministic ones) or ``llm`` (whatever
``SYNTHORG_LLM_BASE_URL`` / ``SYNTHORG_LLM_MODEL`` / ``SYNTHORG_LLM_API_KEY`` configure; the run
stops with a message when none is set). Progress goes to stderr, the JSON to ``--out``.

Protocol
========

**Reports.** Each log becomes one execution report built only from what the run itself shows
(:func:`report_from_log`, pure): the question (task title and description), a task type from
the question's wording (:func:`task_type_of`: ``file_analysis`` / ``calculation`` /
``lookup``), every message after the task statement as a tool call named by its speaker (the
orchestrator's thoughts and instructions as ``Orchestrator``; a terminal's output is the code
execution of the agent that last sent code, so it is named by that agent), a call ``failed``
when its output shows an error (a non-zero ``exitcode``, a traceback, an exception line such as
``KeyError: 'x'``; lines inside code fences do not count), the run's last error as the report's
error (category ``code_error`` for a code execution, ``tool_error`` otherwise, ``wrong_answer``
when the run shows no error, with the final answer as its message), ``retry_count`` = failed
calls that the same agent called again, ``turn_count`` = messages, outcome ``failed`` and the
wrong final answer in the description. The annotations (``mistake_agent``, ``mistake_step``,
``mistake_reason``) and ``ground_truth`` are never read into a report; they only score.

**Agents.** A system is a fleet: the logs of one ``system`` (algorithm-generated CaptainAgent
teams, hand-crafted Magentic-One) are reported by :data:`AGENTS_PER_SYSTEM` SynthOrg agents of
one role (the system), log *n* of the system (in id order) by agent *n* mod 4 — enough agents
for the evolver's default ``min_agents_seen_pattern`` (3) and several lessons per agent, so a
context has to choose among them. The company runs the product's default config except that
the skill evolver is on with the threshold ``make demo`` uses
(``evolver: {enabled: true, min_confidence_for_org_promotion: 0.5}``). Every report is
submitted (``execution_report_submit``) and captured (``execution_report_capture``) in id
order; then one evolver cycle runs (``skill_evolver_run_now``) and an operator approves every
item it emitted (``approval_decide``), so approved org skills reach the agents' contexts.

**Scores** (each with its counts):

* ``root_cause`` — for each log whose capture stored a lesson: the cosine similarity (the
  product's own embedder, ``synthorg.embedding.default_embedder``) between the annotators'
  ``mistake_reason`` and the lesson's full text (all three tiers as an agent reads them),
  against two baselines on the same logs: the report's last error message verbatim
  (``baseline_error``) and another log's ``mistake_reason`` (``baseline_other``: the fixed
  derangement :func:`derangement`, within the system). Means per method and baseline; the
  same three for the F1 of content words (``root_cause_counts.token_f1``).
* ``attribution`` — the share of lessons whose text names the annotated ``mistake_agent``
  (case-insensitive, ``_``/``-``/spaces alike, whole words).
* ``fidelity`` — every fact a lesson or an approval item states (counts of reports, outcomes,
  agents and retries, quoted task types and error categories, tool/agent names in
  backticks, dates), parsed from its text by :func:`stated_facts` (independently of the
  product's renderer; the report's own words it quotes — error message, recovery — are cut
  first), checked against the records it stands on (:func:`fact_matches`). Target 1.0.
* ``contradictions`` — for every context assembled below, the pairs of delivered entries
  that contradict (``memory.procedural.advice.contradiction`` on the lessons' stored advice;
  other entries' advice read from their text with ``advice_from_text``), summed. Target 0.
* ``delivery`` — each log's agent asks for context (``agent_prompt_context``, the API's
  documented ``token_budget`` 800) twice: a **follow-up** — the same task reworded as a
  keyword query (:func:`follow_up_query`) — where the log's lesson should be delivered, and an
  **unrelated** task — the question of the log :func:`derangement` pairs it with — where it
  should not. ``recall`` = follow-ups that delivered the lesson / follow-ups;
  ``precision`` = follow-up deliveries / (follow-up deliveries + unrelated deliveries). A
  lesson the write gate merged across two logs (the same text) counts as delivered for both.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

AGENTS_PER_SYSTEM = 4
TOKEN_BUDGET = 800
MAX_CALLS = 200
ANNOTATIONS = ("mistake_agent", "mistake_step", "mistake_reason", "ground_truth")
COMPANY_CONFIG = {
    "memory": {
        "procedural": {"evolver": {"enabled": True, "min_confidence_for_org_promotion": 0.5}}
    }
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- a log as an execution report (pure) ---------------------------------------------------

_EXIT = re.compile(r"exitcode:\s*(\d+)")
_EXCEPTION_LINE = re.compile(r"^\s*((?:[A-Za-z_][\w]*\.)*[A-Za-z_]*(?:Error|Exception)\b.*)$")
_TRACEBACK = "Traceback (most recent call last)"
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_FINAL = re.compile(r"FINAL ANSWER:\s*(.+)", re.IGNORECASE)
_TASK_GIVERS = frozenset({"human", "user", "system"})


def speaker(message: Mapping[str, Any]) -> str | None:
    """Who sent ``message``: its ``name``, else its role; ``Orchestrator (…)`` roles are the
    orchestrator; an unnamed human/user/system message is the task giver (``None``)."""
    name = str(message.get("name") or "").strip()
    if name:
        return name
    role = str(message.get("role") or "").strip()
    if role.startswith("Orchestrator"):
        return "Orchestrator"
    if not role or role.lower() in _TASK_GIVERS:
        return None
    return role


def is_terminal(agent: str) -> bool:
    return "terminal" in agent.lower()


def error_in(text: str, *, execution: bool) -> str:
    """The error ``text`` shows ("" for none): its last exception line outside code fences,
    else (for a code execution) the failed ``exitcode`` line or the traceback."""
    prose = _FENCE.sub("", text)
    lines = [m.group(1).strip() for m in map(_EXCEPTION_LINE.match, prose.splitlines()) if m]
    codes = [int(code) for code in _EXIT.findall(text)]
    if lines:
        return lines[-1]
    if execution and any(codes):
        line = next(ln for ln in text.splitlines() if _EXIT.search(ln) and "exitcode: 0" not in ln)
        return line.strip()
    if _TRACEBACK in prose:
        return _TRACEBACK
    return ""


def final_answer(history: Sequence[Mapping[str, Any]]) -> str:
    """The run's final answer as it shows it: the last ``FINAL ANSWER:`` line, else the last
    line of the last message that is not just ``TERMINATE``."""
    for message in reversed(history):
        found = _FINAL.findall(str(message.get("content") or ""))
        if found:
            return found[-1].strip()
    for message in reversed(history):
        lines = [
            ln.strip()
            for ln in str(message.get("content") or "").splitlines()
            if ln.strip() and ln.strip() != "TERMINATE"
        ]
        if lines:
            return lines[-1]
    return ""


TASK_TYPES = (
    (
        "file_analysis",
        re.compile(
            r"\b(attached|file|spreadsheet|excel|xlsx|csv|pdf|image|picture|photo|audio|mp3|"
            r"recording|video|youtube)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "calculation",
        re.compile(
            r"\b(how many|how much|calculate|compute|total|sum|average|percentage|percent|"
            r"difference|round(ed)?)\b",
            re.IGNORECASE,
        ),
    ),
)
DEFAULT_TASK_TYPE = "lookup"


def task_type_of(question: str) -> str:
    """A coarse task type from the question's wording (what a dispatcher could label)."""
    for name, pattern in TASK_TYPES:
        if pattern.search(question):
            return name
    return DEFAULT_TASK_TYPE


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def report_from_log(item: Mapping[str, Any]) -> dict[str, Any]:
    """The execution report (``POST /api/v1/executions`` body) of one Who&When log, from what
    the run shows — never from its annotations (see the module docstring)."""
    history = list(item.get("history") or [])
    question = str(item.get("question") or "").strip()
    calls: list[dict[str, Any]] = []
    code_author = ""
    previous = ""
    last_error: tuple[str, str, str] | None = None  # (category, message, call name)
    for message in history[1:]:  # history[0] states the task
        agent = speaker(message)
        if agent is None:
            continue
        text = str(message.get("content") or "")
        execution = is_terminal(agent)
        name = (code_author or previous or agent) if execution else agent
        error = error_in(text, execution=execution)
        call: dict[str, Any] = {"name": name[:200], "status": "failed" if error else "succeeded"}
        if error:
            call["error"] = _clip(error, 2000)
            last_error = ("code_error" if execution else "tool_error", error, name)
        calls.append(call)
        if not execution:
            previous = agent
            if "```" in text:
                code_author = agent
    calls = calls[-MAX_CALLS:]
    retries = sum(
        1
        for index, call in enumerate(calls)
        if call["status"] == "failed" and any(c["name"] == call["name"] for c in calls[index + 1 :])
    )
    answer = _clip(final_answer(history), 300)
    if last_error is None:
        error = {"category": "wrong_answer", "message": f"Final answer (wrong): {answer}"}
    else:
        error = {"category": last_error[0], "message": _clip(last_error[1], 4000)}
    description = f"{question}\n\nFinal answer given (wrong): {answer}" if answer else question
    return {
        "task_title": _clip(question, 500),
        "task_type": task_type_of(question),
        "task_description": description[:10_000],
        "outcome": "failed",
        "error": error,
        "tool_calls": calls,
        "retry_count": retries,
        "turn_count": len(history),
    }


# --- protocol helpers (pure) ----------------------------------------------------------------

_STOPWORDS = """a an and are as at be been but by can could did do does for from had has have
how i if in into is it its me my of on or our please should so than that the their them then
there these this those to was we were what when where which who whom whose why will with would
you your yours also any each few more most other some such only own same too very just given
find answer question solve task"""
STOPWORDS = frozenset(_STOPWORDS.split())
_TOKEN = re.compile(r"[a-z0-9]+")


def content_words(text: str) -> list[str]:
    return [w for w in _TOKEN.findall(str(text).lower()) if len(w) > 1 and w not in STOPWORDS]


def follow_up_query(question: str, *, max_words: int = 24) -> str:
    """The same task reworded: its content words in order, once each, as a keyword query."""
    words = list(dict.fromkeys(content_words(question)))[:max_words]
    return "Follow-up task: " + " ".join(words)


def token_f1(candidate: str, reference: str) -> float:
    """F1 of the two texts' content-word multisets."""
    a, b = Counter(content_words(candidate)), Counter(content_words(reference))
    overlap = sum((a & b).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(a.values()), overlap / sum(b.values())
    return 2 * precision * recall / (precision + recall)


def derangement(keys: Sequence[str], groups: Sequence[str]) -> dict[str, str]:
    """A fixed pairing of each key with another: within its group (in the given order, each
    key with the one half the group further on), or across all keys for a group of one."""
    by_group: dict[str, list[str]] = {}
    for key, group in zip(keys, groups, strict=True):
        by_group.setdefault(group, []).append(key)
    pairs: dict[str, str] = {}
    for members in by_group.values():
        if len(members) < 2:
            continue
        shift = len(members) // 2
        for index, key in enumerate(members):
            pairs[key] = members[(index + shift) % len(members)]
    if len(keys) >= 2:
        for index, key in enumerate(keys):
            pairs.setdefault(key, keys[(index + len(keys) // 2) % len(keys)])
    return pairs


def agent_norm(text: str) -> str:
    return " ".join(re.sub(r"[_\-\s]+", " ", str(text).lower()).split())


def names_agent(text: str, agent: str) -> bool:
    """Does ``text`` name ``agent`` (case-insensitive, ``_``/``-``/spaces alike, whole
    words)?"""
    wanted = agent_norm(agent)
    if not wanted:
        return False
    spaced = agent_norm(re.sub(r"[^\w\s-]", " ", str(text)))
    return re.search(rf"(?<![a-z0-9]){re.escape(wanted)}(?![a-z0-9])", spaced) is not None


# --- facts stated in a text, checked against the records (pure) -----------------------------


@dataclass(frozen=True)
class Fact:
    kind: str  # reports | outcome | agents | retries | retry_range | task_type | error_category
    #          | name | date
    value: Any
    text: str


_N = r"(\d+)"
_FACTS = (
    ("retry_range", re.compile(rf"\b{_N} to {_N} retr(?:y|ies)\b", re.I)),
    ("retries", re.compile(rf"(?<!to )\b{_N} retr(?:y|ies)\b", re.I)),
    ("reports", re.compile(
        rf"\b{_N} (?:failed |failing |succeeded |partial )?(?:execution )?reports?\b", re.I
    )),
    ("outcome", re.compile(
        rf"\b{_N} (failed|partial|succeeded)\b(?! (?:execution )?reports?\b)", re.I
    )),
    ("agents", re.compile(rf"\b{_N} (?:distinct |different )?agents?\b", re.I)),
    ("task_type", re.compile(
        r"task types? '([^']+)'|'([^']+)' tasks?\b|an? '([^']+)' task\b", re.I
    )),
    ("error_category", re.compile(
        r"error categor(?:y|ies) '([^']+)'|an? '([^']+)' error\b|'([^']+)' errors?\b", re.I
    )),
    ("name", re.compile(r"`([^`]+)`")),
    ("date", re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")),
)  # fmt: skip


def _fold(text: str) -> str:
    return " ".join(str(text).split())


def cut_quotes(text: str, quoted: Iterable[str], *, shortest: int = 12) -> str:
    """``text`` without the longest leading part (≥ ``shortest`` characters) of each quoted
    record text it contains (the report's own words: not facts the writer states)."""
    text = _fold(text)
    for raw in quoted:
        words = _fold(raw)
        for end in range(len(words), shortest - 1, -1):
            if words[:end] in text:
                text = text.replace(words[:end], " ")
                break
    return text


def stated_facts(text: str) -> list[Fact]:
    facts: list[Fact] = []
    for kind, pattern in _FACTS:
        for match in pattern.finditer(text):
            groups = [g for g in match.groups() if g is not None]
            if kind == "outcome":
                value: Any = (int(groups[0]), groups[1].lower())
            elif kind == "retry_range":
                value = (int(groups[0]), int(groups[1]))
            elif kind in ("retries", "reports", "agents"):
                value = int(groups[0])
            else:
                value = groups[0]
            facts.append(Fact(kind, value, match.group(0)))
    return facts


@dataclass
class Records:
    """What a text stands on: its reports' fields, and the agents that reported them."""

    reports: list[dict]
    agents: list[str]
    extra_names: tuple[str, ...] = ()  # other names the records hold (e.g. the company's agents)

    @property
    def days(self) -> list[str]:
        return sorted({str(r["created_at"])[:10] for r in self.reports if r.get("created_at")})


def fact_matches(fact: Fact, records: Records) -> bool:
    reports = records.reports
    if fact.kind == "reports":
        return fact.value == len(reports)
    if fact.kind == "outcome":
        n, outcome = fact.value
        return n == sum(1 for r in reports if r.get("outcome") == outcome)
    if fact.kind == "agents":
        return fact.value == len(set(records.agents))
    retries = [int(r.get("retry_count") or 0) for r in reports]
    if fact.kind == "retries":
        return fact.value in retries
    if fact.kind == "retry_range":
        return bool(retries) and fact.value == (min(retries), max(retries))
    if fact.kind == "task_type":
        return fact.value.strip().lower() in {
            str(r.get("task_type") or "").lower() for r in reports
        }
    if fact.kind == "error_category":
        return fact.value.strip().lower() in {
            str(r.get("error_category") or "").lower() for r in reports
        }
    if fact.kind == "name":
        names = {str(c.get("name")) for r in reports for c in r.get("tool_calls") or []}
        names |= set(records.agents) | set(records.extra_names)
        parts = [p.strip() for p in fact.value.split(">")]
        return all(p in names for p in parts)
    if fact.kind == "date":
        days = records.days
        return bool(days) and days[0] <= fact.value <= days[-1]
    return False


def check_text(text: str, records: Records) -> tuple[int, int, list[str]]:
    """(facts stated, facts matching, the mismatching facts' wording)."""
    quoted = [
        q
        for r in records.reports
        for q in (
            r.get("error_message"),
            r.get("recovery"),
            r.get("task_title"),
            *(c.get("error") for c in r.get("tool_calls") or []),
        )
        if q
    ]
    facts = stated_facts(cut_quotes(text, quoted))
    wrong = [f.text for f in facts if not fact_matches(f, records)]
    return len(facts), len(facts) - len(wrong), wrong


def contradicting_pairs(advices: Sequence[Any]) -> list[tuple[int, int, str]]:
    """Index pairs of ``advices`` (``memory.procedural.advice.Advice``) that contradict."""
    from memory.procedural.advice import contradiction

    found = []
    for (i, a), (j, b) in itertools.combinations(enumerate(advices), 2):
        clash = contradiction(a, b)
        if clash is not None:
            found.append((i, j, clash.reason()))
    return found


INTERNAL_PATTERNS = (
    re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
    re.compile(r"\(run `[0-9a-f]+`\)|\brun `[0-9a-f]{6,}`"),
    re.compile(r"\b\d+ added, \d+ already known\b"),
    re.compile(r"\[extractive\]|\bAnchors:|\[(?:start|mid|end)\] "),
)
_BEFORE_MARK = re.compile(r"(\w+)…")


def internal_ids(text: str) -> list[str]:
    """Internal ids and bookkeeping in a context's text (what must never reach an agent)."""
    return [m.group(0) for pattern in INTERNAL_PATTERNS for m in pattern.finditer(text)]


def cut_mid_word(text: str, sources: Sequence[str]) -> list[str]:
    """Words a cut mark ends inside: the word before each ``…`` is, in the source texts, only
    ever the start of a longer word."""
    cut = []
    for match in _BEFORE_MARK.finditer(text):
        word = match.group(1)
        whole = re.compile(rf"\b{re.escape(word)}\b")
        longer = re.compile(rf"\b{re.escape(word)}\w")
        if any(longer.search(s) for s in sources) and not any(whole.search(s) for s in sources):
            cut.append(text[max(0, match.start() - 30) : match.end()])
    return cut


def mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def ratio(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


# --- the run --------------------------------------------------------------------------------


def configure_llm(method: str):
    """Point the product's LLM settings at the method's model; returns a stop callable."""
    from django.conf import settings

    conf = dict(getattr(settings, "SYNTHORG_LLM", None) or {})
    if method == "rule":
        settings.SYNTHORG_LLM = {**conf, "BASE_URL": "", "MODEL": ""}
        return lambda: None
    if method == "llm":
        if not (conf.get("BASE_URL") or "").strip():
            raise SystemExit(
                "--method llm: no LLM is configured. Set SYNTHORG_LLM_BASE_URL (and "
                "SYNTHORG_LLM_MODEL, SYNTHORG_LLM_API_KEY if the endpoint needs them)."
            )
        log(f"LLM: {conf['BASE_URL']} model {conf.get('MODEL') or '(first listed)'}")
        return lambda: None
    from memory.interfaces.demo_llm import MODEL_ID, DemoLLMServer

    server = DemoLLMServer(host="127.0.0.1", port=0)
    server.start()
    settings.SYNTHORG_LLM = {
        **conf,
        "BASE_URL": server.base_url,
        "MODEL": MODEL_ID,
        "API_KEY": "",
        "MAX_RETRIES": 0,
    }
    log(f"stand-in model {MODEL_ID} on {server.base_url}")
    return server.stop


def lesson_text(lesson) -> str:
    from memory.procedural.rendering import render_full

    return render_full(lesson)


def entry_advice(entry):
    from memory.procedural.advice import Advice, advice_from_text
    from memory.procedural.selectors import lesson_of

    if entry.memory is not None:
        lesson = lesson_of(entry.memory)
        if lesson is not None:
            stored = Advice.from_dict(lesson.advice)
            if stored is not None:
                return stored
    return advice_from_text(entry.content)


def make_fleet(company, items: list[dict], systems: list[str]) -> tuple[dict, dict[str, Any]]:
    """``AGENTS_PER_SYSTEM`` agents per system, and the agent each log's report comes from
    (the system's agents in turn)."""
    from persistence.services.agents import agent_create

    agents = {}
    for system in systems:
        for k in range(AGENTS_PER_SYSTEM):
            name = f"{system}-{k + 1}"
            agents[(system, k)] = agent_create(
                company=company, name=name, role=system, memory_level="persistent"
            )
    position: Counter = Counter()
    agent_of: dict[str, Any] = {}
    for item in items:
        agent_of[item["id"]] = agents[
            (item["system"], position[item["system"]] % AGENTS_PER_SYSTEM)
        ]
        position[item["system"]] += 1
    return agents, agent_of


def fidelity_of(
    company, lesson_of_log: dict, stored_reports: dict, all_agent_names: tuple[str, ...]
) -> tuple[dict[str, list[int]], list[dict]]:
    """The facts lessons and evolver approval items state, and how many match their records
    (``[stated, matching]`` per kind), with the mismatches."""
    from orgmemory.models import ApprovalItem

    fidelity = {"lesson": [0, 0], "approval_item": [0, 0]}
    mismatches: list[dict] = []
    for key, lesson in lesson_of_log.items():
        if lesson is None:
            continue
        source = stored_reports[str(lesson.report_id)]
        records = Records([source], [source["agent__name"]], all_agent_names)
        stated, matching, wrong = check_text(lesson_text(lesson), records)
        fidelity["lesson"][0] += stated
        fidelity["lesson"][1] += matching
        mismatches += [{"log": key, "kind": "lesson", "fact": w} for w in wrong]
    for approval in ApprovalItem.objects.filter(company=company, source="skill_evolver"):
        ids = [str(i) for i in approval.evidence.get("report_ids") or []]
        rows = [stored_reports[i] for i in ids if i in stored_reports]
        records = Records(rows, [r["agent__name"] for r in rows], all_agent_names)
        proposal = approval.metadata.get("proposal") or {}
        text = "\n".join(
            [
                approval.title,
                approval.description,
                str(proposal.get("content") or ""),
                str(proposal.get("rationale") or ""),
            ]
        )
        stated, matching, wrong = check_text(text, records)
        fidelity["approval_item"][0] += stated
        fidelity["approval_item"][1] += matching
        mismatches += [
            {"item": str(approval.pk), "kind": "approval_item", "fact": w} for w in wrong
        ]
    return fidelity, mismatches


def dump_texts(path: Path, company, lesson_of_log: dict) -> None:
    """Every lesson's and evolver approval item's text, for debugging."""
    from orgmemory.models import ApprovalItem

    texts: dict[str, Any] = {k: lesson_text(v) for k, v in lesson_of_log.items() if v is not None}
    texts["approval_items"] = [
        {"title": a.title, "description": a.description, "proposal": a.metadata.get("proposal")}
        for a in ApprovalItem.objects.filter(company=company, source="skill_evolver")
    ]
    path.write_text(json.dumps(texts, indent=1, default=str))


@dataclass
class ContextTally:
    """What the context probes delivered: readability, contradictions and delivery."""

    sources: list[str]  # the reports' texts (a cut mark inside one of their words)
    contexts: int = 0
    pairs: int = 0
    contexts_with_pair: int = 0
    pair_examples: list[dict] = field(default_factory=list)
    internal_found: list[str] = field(default_factory=list)
    cuts_found: list[str] = field(default_factory=list)
    cut_marks: int = 0
    entry_kinds: Counter = field(default_factory=Counter)
    probes_follow: int = 0
    delivered_follow: int = 0
    probes_unrelated: int = 0
    delivered_unrelated: int = 0
    same_lesson: int = 0

    def read(self, key: str, probe: str, text: str, included: list) -> None:
        """One context's text and entries: internal ids, cut marks, contradicting pairs."""
        self.contexts += 1
        self.internal_found += internal_ids(text)
        self.cut_marks += text.count("…")
        self.cuts_found += cut_mid_word(text, self.sources)
        self.entry_kinds.update(
            "lesson" if (e.memory is not None and e.memory.category == "procedural") else e.kind
            for e in included
        )
        found = contradicting_pairs([entry_advice(e) for e in included])
        self.pairs += len(found)
        self.contexts_with_pair += bool(found)
        for i, j, reason in found[:2]:
            if len(self.pair_examples) < 10:
                self.pair_examples.append(
                    {"log": key, "probe": probe, "a": included[i].key, "b": included[j].key,
                     "reason": reason[:300]}
                )  # fmt: skip

    def deliver(self, probe: str, hit: bool, *, same_lesson: bool) -> None:
        """Whether the log's lesson was in the context of a follow-up or unrelated probe."""
        if probe == "follow_up":
            self.probes_follow += 1
            self.delivered_follow += hit
        else:
            self.probes_unrelated += 1
            self.delivered_unrelated += hit
            self.same_lesson += same_lesson


def probe_contexts(
    company,
    items: list[dict],
    other: dict[str, str],
    *,
    agent_of: dict[str, Any],
    lesson_of_log: dict,
    reports: dict[str, dict],
) -> ContextTally:
    """For each log, a context request for a reworded follow-up of its question and one for
    an unrelated log's (``other``), by the log's agent."""
    from memory.prompting.context import ContextRequest, agent_prompt_context
    from persistence.selectors.config import company_config

    keys = [item["id"] for item in items]
    question = {item["id"]: item["question"] for item in items}
    config = company_config(company).memory.retrieval
    tally = ContextTally(
        sources=[
            str(body.get(name) or "")
            for body in reports.values()
            for name in ("task_title", "task_description", "recovery")
        ]
        + [str((body.get("error") or {}).get("message") or "") for body in reports.values()]
    )
    for n, key in enumerate(keys, 1):
        lesson = lesson_of_log[key]
        wanted = str(lesson.memory_id) if lesson is not None else None
        for probe, query in (
            ("follow_up", follow_up_query(question[key])),
            ("unrelated", question[other[key]] if key in other else None),
        ):
            if query is None:
                continue
            request = ContextRequest.build(query_text=query, token_budget=TOKEN_BUDGET)
            prepared = agent_prompt_context(agent=agent_of[key], request=request, config=config)
            included = list(prepared.included)
            tally.read(key, probe, "\n".join(m["content"] for m in prepared.messages), included)
            if wanted is None:
                continue
            hit = any(e.key == wanted for e in included)
            other_lesson = lesson_of_log.get(other[key]) if probe == "unrelated" else None
            tally.deliver(
                probe,
                hit,
                same_lesson=bool(
                    hit and other_lesson is not None and str(other_lesson.memory_id) == wanted
                ),
            )
        if n % 10 == 0 or n == len(keys):
            log(f"  contexts for {n}/{len(keys)} logs")
    return tally


def run(items: list[dict], method: str) -> dict:
    import numpy as np
    from django.contrib.auth import get_user_model

    from memory.procedural.evolver.services import skill_evolver_run_now
    from memory.procedural.models import ExecutionCapture, ExecutionReport, ProceduralLesson
    from memory.procedural.services.capture import execution_report_capture
    from memory.procedural.services.reports import execution_report_submit
    from orgmemory.models import ApprovalItem
    from orgmemory.services.approvals import approval_decide
    from persistence.principal import Principal
    from persistence.services.companies import company_create, membership_set
    from synthorg.embedding import default_embedder

    timings: dict[str, float] = {}
    started = time.perf_counter()
    company = company_create(
        name="Learning quality", slug="learning-quality", config=COMPANY_CONFIG
    )
    systems = sorted({item["system"] for item in items})
    agents, agent_of = make_fleet(company, items, systems)

    # 1. reports → captures
    reports: dict[str, dict] = {}
    captures: dict[str, Any] = {}
    for n, item in enumerate(items, 1):
        body = report_from_log(item)
        reports[item["id"]] = body
        submitted = execution_report_submit(agent=agent_of[item["id"]], data=body, enqueue=False)
        captures[item["id"]] = execution_report_capture(report_id=str(submitted.report.pk))
        if n % 10 == 0 or n == len(items):
            log(f"  captured {n}/{len(items)} ({captures[item['id']].status})")
    timings["capture_s"] = round(time.perf_counter() - started, 1)

    # 2. the evolver, then an operator approves every item
    t = time.perf_counter()
    evolver = skill_evolver_run_now(company=company, trigger="command", progress=log)
    user = get_user_model().objects.create_user(username="lq-operator", password=None)
    membership_set(company=company, user=user, role="operator")
    operator = Principal.for_human(user, company, "operator")
    items_emitted = list(ApprovalItem.objects.filter(company=company, source="skill_evolver"))
    approved = 0
    for approval in items_emitted:
        if approval.status == ApprovalItem.Status.PENDING:
            approval_decide(
                company=company, actor=operator, item_id=approval.pk, decision="approve"
            )
            approved += 1
    timings["evolver_s"] = round(time.perf_counter() - t, 1)
    log(
        f"evolver: {getattr(evolver, 'status', None)}, {len(items_emitted)} item(s), "
        f"{approved} approved"
    )

    # lessons per log
    captures = {
        key: ExecutionCapture.objects.get(report_id=c.report_id) for key, c in captures.items()
    }
    lessons = {
        str(lesson.memory_id): lesson
        for lesson in ProceduralLesson.objects.filter(
            memory_id__in=[c.memory_id for c in captures.values() if c.memory_id]
        )
    }
    lesson_of_log = {
        key: lessons.get(str(c.memory_id)) if c.memory_id else None for key, c in captures.items()
    }
    stored_reports = {
        str(r["id"]): r
        for r in ExecutionReport.objects.filter(company=company).values(
            "id", "agent__name", "task_title", "task_type", "outcome", "error_category",
            "error_message", "tool_calls", "retry_count", "recovery", "created_at",
        )
    }  # fmt: skip

    # 3. fidelity: lessons and approval items against their records
    fidelity, mismatches = fidelity_of(
        company, lesson_of_log, stored_reports, tuple(a.name for a in agents.values())
    )
    dump = os.environ.get("LEARNING_QUALITY_DUMP")  # texts for debugging, outside the project
    if dump:
        dump_texts(Path(dump), company, lesson_of_log)
    facts = sum(v[0] for v in fidelity.values())
    matching = sum(v[1] for v in fidelity.values())

    # 4. contexts: follow-up and unrelated probes
    t = time.perf_counter()
    keys = [item["id"] for item in items]
    other = derangement(keys, [item["system"] for item in items])
    tally = probe_contexts(
        company, items, other, agent_of=agent_of, lesson_of_log=lesson_of_log, reports=reports
    )
    timings["contexts_s"] = round(time.perf_counter() - t, 1)

    # 5. root cause and attribution
    t = time.perf_counter()
    scored = [key for key in keys if lesson_of_log[key] is not None]
    embedder = default_embedder()
    by_item = {item["id"]: item for item in items}

    def vectors(texts: list[str]):
        if not texts:
            return np.zeros((0, 1))
        matrix = np.asarray(embedder.embed(texts), dtype=float)
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

    reasons = vectors([by_item[k]["mistake_reason"] for k in scored])
    candidates = {
        "method": [lesson_text(lesson_of_log[k]) for k in scored],
        "baseline_error": [reports[k]["error"]["message"] for k in scored],
        "baseline_other": [
            by_item[other[k]]["mistake_reason"] if k in other else "" for k in scored
        ],
    }
    cosine, f1 = {}, {}
    beats = {"baseline_error": 0, "baseline_other": 0}
    per_log_cos = {}
    for name, texts in candidates.items():
        vecs = vectors([t or " " for t in texts])
        sims = [float(v) for v in (vecs * reasons).sum(axis=1)] if scored else []
        per_log_cos[name] = sims
        cosine[name] = mean(sims)
        f1[name] = mean(
            [
                token_f1(text, by_item[k]["mistake_reason"])
                for text, k in zip(texts, scored, strict=True)
            ]
        )
    for name in beats:
        beats[name] = sum(
            1 for a, b in zip(per_log_cos["method"], per_log_cos[name], strict=True) if a > b
        )
    naming = [
        k for k in scored if names_agent(lesson_text(lesson_of_log[k]), by_item[k]["mistake_agent"])
    ]

    def last_failed(key: str) -> str:
        failed = [c["name"] for c in reports[key]["tool_calls"] if c["status"] == "failed"]
        return failed[-1] if failed else ""

    failing_named = sum(
        1 for k in scored if agent_norm(last_failed(k)) == agent_norm(by_item[k]["mistake_agent"])
    )
    timings["scoring_s"] = round(time.perf_counter() - t, 1)

    by_system = {}
    for system in systems:
        ks = [k for k in scored if by_item[k]["system"] == system]
        idx = [scored.index(k) for k in ks]
        by_system[system] = {
            "lessons": len(ks),
            "attribution": ratio(sum(1 for k in ks if k in naming), len(ks)),
            "root_cause_cosine": {
                name: mean([per_log_cos[name][i] for i in idx]) for name in per_log_cos
            },
        }

    status_counts = Counter(c.status for c in captures.values())
    method_counts = Counter(c.method or "" for c in captures.values())
    reasons_recorded = Counter(
        re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", c.reason or "")[:200]
        for c in captures.values()
        if c.reason
    )
    return {
        "fidelity": ratio(matching, facts),
        "fidelity_counts": {
            "facts": facts,
            "matching": matching,
            "by_kind": {k: {"facts": v[0], "matching": v[1]} for k, v in fidelity.items()},
            "mismatches": mismatches[:20],
        },
        "contradictions": tally.pairs,
        "contradictions_counts": {
            "contexts": tally.contexts,
            "pairs": tally.pairs,
            "contexts_with_a_pair": tally.contexts_with_pair,
            "delivered_entries": dict(tally.entry_kinds),
            "examples": tally.pair_examples,
        },
        "readability": {
            "contexts": tally.contexts,
            "internal_ids": len(tally.internal_found),
            "cut_marks": tally.cut_marks,
            "cut_mid_word": len(tally.cuts_found),
            "examples": (tally.internal_found[:5] + tally.cuts_found[:5]),
        },
        "attribution": ratio(len(naming), len(scored)),
        "attribution_counts": {
            "lessons": len(scored),
            "naming_annotated_agent": len(naming),
            "report_last_failed_call_is_annotated_agent": failing_named,
        },
        "root_cause": cosine,
        "root_cause_counts": {
            "logs": len(keys),
            "logs_with_lesson": len(scored),
            "measure": "mean cosine similarity to mistake_reason (the product's embedder)",
            "token_f1": f1,
            "method_beats_baseline": beats,
        },
        "delivery": {
            "precision": ratio(
                tally.delivered_follow, tally.delivered_follow + tally.delivered_unrelated
            ),
            "recall": ratio(tally.delivered_follow, tally.probes_follow),
        },
        "delivery_counts": {
            "follow_up_probes": tally.probes_follow,
            "delivered_for_follow_up": tally.delivered_follow,
            "unrelated_probes": tally.probes_unrelated,
            "delivered_for_unrelated": tally.delivered_unrelated,
            "unrelated_with_the_same_merged_lesson": tally.same_lesson,
            "token_budget": TOKEN_BUDGET,
        },
        "by_system": by_system,
        "captures": {
            "statuses": dict(status_counts),
            "methods": dict(method_counts),
            "reasons": dict(reasons_recorded.most_common(8)),
            "distinct_lessons": len({str(c.memory_id) for c in captures.values() if c.memory_id}),
        },
        "evolver": {
            "status": getattr(evolver, "status", None),
            "method": getattr(evolver, "method", None),
            "patterns_found": getattr(evolver, "patterns_found", None),
            "patterns_eligible": getattr(evolver, "patterns_eligible", None),
            "items": len(items_emitted),
            "approved": approved,
            "drafts_failed": getattr(evolver, "drafts_failed", None),
        },
        "report_shape": {
            "error_categories": dict(Counter(r["error"]["category"] for r in reports.values())),
            "task_types": dict(Counter(r["task_type"] for r in reports.values())),
            "with_failed_call": sum(
                1 for r in reports.values() if any(c["status"] == "failed" for c in r["tool_calls"])
            ),
        },
        "timings": timings,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/learning_quality.py",
        description="Learning quality on annotated failure logs (Who&When format).",
    )
    parser.add_argument("--data", required=True, help="Who&When-format JSON (read in place)")
    parser.add_argument("--method", required=True, choices=["rule", "standin", "llm"])
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--limit", type=int, default=0, help="the first N logs only (0: all)")
    args = parser.parse_args(argv)
    data = json.loads(Path(args.data).read_text())
    items = sorted(data["items"], key=lambda i: (i["system"], _natural(i["id"])))
    if args.limit:
        # keep the systems' mix: every k-th log of the ordered list
        step = max(1, len(items) // args.limit)
        items = items[::step][: args.limit]
    log(f"{len(items)} logs from {args.data} ({dict(Counter(i['system'] for i in items))})")

    import django

    django.setup()
    from django.test.utils import setup_test_environment

    setup_test_environment()
    from bench.scratch_db import scratch_database

    started = time.perf_counter()
    stop = configure_llm(args.method)
    try:
        with scratch_database(f"learning_{args.method}"):
            result = run(items, args.method)
    finally:
        stop()
    command = (
        f"bench/learning_quality.py --data {args.data} --method {args.method} --out {args.out}"
    )
    if args.limit:
        command += f" --limit {args.limit}"
    output = {
        "benchmark": "learning_quality",
        "method": args.method,
        "command": command,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "data": {
            "file": Path(args.data).name,
            "split": data.get("split"),
            "logs": len(items),
            "systems": dict(Counter(i["system"] for i in items)),
        },
        "protocol": {
            "agents_per_system": AGENTS_PER_SYSTEM,
            "token_budget": TOKEN_BUDGET,
            "company_config": COMPANY_CONFIG,
        },
        **result,
        "seconds": round(time.perf_counter() - started, 1),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(output, indent=2, default=str) + "\n")
    log(
        f"wrote {out}: fidelity {output['fidelity']}, contradictions {output['contradictions']}, "
        f"attribution {output['attribution']}, root cause {output['root_cause']}, "
        f"delivery {output['delivery']} ({output['seconds']} s)"
    )
    return 0


def _natural(key: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", key))


if __name__ == "__main__":
    sys.exit(main())
