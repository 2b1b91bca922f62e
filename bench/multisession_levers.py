"""Multi-session recall levers (issue 24 item 2), measured on the real legs, compared offline.

``dump``: every conversation of ``--data`` is ingested once through ``memory_store_batch``
(the product's default config; turns with the previous turn as context unless
``--no-context``), and every question's dense and sparse ranked lists are recorded at
``--depth`` exactly as ``run_legs`` computes them for ``memory_search``, together with each
memory's ``dia_id``, ``created_at`` and content. ``evaluate``: the product's fusion (RRF,
``rrf_k`` 10, each leg cut to the depth a ``limit`` 20 search uses) is the baseline, and
every lever re-ranks the same lists (plus, for expansion, the time neighbours a SQL lookup
by ``created_at`` would return), so each lever is compared on identical candidates::

    python bench/multisession_levers.py dump --data ../shared/bench-data/locomo_dev.json \\
        --out bench/results/multisession/legs_locomo.json
    python bench/multisession_levers.py evaluate \\
        --legs bench/results/multisession/legs_locomo.json \\
        --legs bench/results/multisession/legs_lme.json \\
        --out bench/results/multisession/levers.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

from bench.locomo import load_conversations, log, parse_session_date, progress  # noqa: E402

#: what ``memory_search`` uses for the benchmark's ``limit`` 20 (max(50, 3 × 20))
BASE_DEPTH = 60
BASE_RRF_K = 10


# --------------------------------------------------------------------------- dump


def dump(*, data: str, ids: set[str] | None, with_context: bool, depth: int) -> dict:
    import django

    django.setup()
    from django.utils import timezone

    from bench.locomo import store_turns
    from bench.scratch_db import scratch_database
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import sparse as sparse_module
    from memory.core.selectors.search.legs import run_legs
    from memory.core.selectors.search.scope import Part, scope_filters
    from persistence.services.agents import agent_create
    from persistence.services.companies import company_create
    from synthorg.db.roles import owner_execute

    raw = {s["sample_id"]: s for s in json.loads(Path(data).read_text())}
    out: dict[str, Any] = {"data": Path(data).name, "context": with_context, "depth": depth}
    convs = []
    with scratch_database("multisession"):
        for conv in load_conversations(data, ids=ids, with_context=with_context):
            tag = uuid.uuid4().hex[:6]
            company = company_create(
                name=f"ms {conv.sample_id} {tag}", slug=f"ms-{conv.sample_id}-{tag}".lower()
            )
            agent = agent_create(company=company, name="ms", memory_level="persistent")
            stored = store_turns(agent, conv.turns, label=f"{conv.sample_id} ingest")
            owner_execute("ANALYZE memory_memory")
            sparse_module._lexeme_stats = (float("-inf"), {})
            memories = {
                str(stored[t.dia_id]): [t.dia_id, t.created_at.isoformat(), t.content]
                for t in conv.turns
            }
            parts = [
                Part(
                    "m.company_id = %s AND m.agent_id = %s AND NOT m.is_shared",
                    (company.pk, agent.pk),
                )
            ]
            filters = scope_filters(MemoryQuery(text="x"), timezone.now())
            questions = []
            sample = raw[conv.sample_id]
            for position, qa in enumerate(conv.questions, start=1):
                legs = run_legs(
                    company=company, parts=parts, filters=filters,
                    text=str(qa["question"]), embedder=None, depth=depth,
                )  # fmt: skip
                questions.append(
                    {
                        "question": qa["question"],
                        "question_date": qa.get("question_date"),
                        "category": qa["category"],
                        "evidence": [
                            str(stored[e]) if e in stored else None
                            for e in qa.get("evidence") or []
                        ],
                        "dense": [[str(i), float(s)] for i, s in legs.dense],
                        "sparse": [[str(i), float(s)] for i, s in legs.sparse],
                    }
                )
                if position % 25 == 0 or position == len(conv.questions):
                    progress(f"{conv.sample_id} legs", position, len(conv.questions))
            convs.append(
                {
                    "sample_id": conv.sample_id,
                    "speakers": [
                        sample["conversation"].get("speaker_a", ""),
                        sample["conversation"].get("speaker_b", ""),
                    ],
                    "memories": memories,
                    "questions": questions,
                }
            )
            log(f"{conv.sample_id}: {len(conv.turns)} turns, {len(questions)} questions")
    out["conversations"] = convs
    return out


# --------------------------------------------------------------------------- levers


def rrf(lists: list[list[str]], k: int) -> list[tuple[str, float]]:
    scores: dict[str, float] = defaultdict(float)
    for ranked in lists:
        for rank, mid in enumerate(ranked, start=1):
            scores[mid] += 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


class Conv:
    """One dumped conversation with the lookups levers need."""

    def __init__(self, raw: dict) -> None:
        self.sample_id = raw["sample_id"]
        self.speakers = [s for s in raw.get("speakers", []) if s]
        self.created = {
            mid: datetime.fromisoformat(v[1]) for mid, v in raw["memories"].items()
        }
        self.content = {mid: v[2] for mid, v in raw["memories"].items()}
        self.dia = {mid: v[0] for mid, v in raw["memories"].items()}
        self.timeline = sorted(self.created, key=lambda mid: (self.created[mid], mid))
        self.position = {mid: i for i, mid in enumerate(self.timeline)}
        self.questions = raw["questions"]

    def session(self, mid: str, gap_s: float = 1800) -> int:
        """A session = a run of memories no more than ``gap_s`` apart (what the product can
        know: ``created_at``, not the benchmark's session ids)."""
        if not hasattr(self, "_sessions"):
            self._sessions: dict[float, dict[str, int]] = {}
        if gap_s not in self._sessions:
            ids, current, previous = {}, 0, None
            for m in self.timeline:
                if previous is not None and (
                    self.created[m] - self.created[previous]
                ).total_seconds() > gap_s:
                    current += 1
                ids[m] = current
                previous = m
            self._sessions[gap_s] = ids
        return self._sessions[gap_s][mid]

    def neighbours(self, mid: str, radius: int, window_s: float) -> list[str]:
        """Memories stored up to ``radius`` places before/after ``mid`` and within
        ``window_s`` seconds of it (a ``created_at`` range lookup)."""
        at = self.position[mid]
        found = []
        for offset in range(1, radius + 1):
            for j in (at - offset, at + offset):
                if 0 <= j < len(self.timeline):
                    other = self.timeline[j]
                    gap = abs((self.created[other] - self.created[mid]).total_seconds())
                    if gap <= window_s:
                        found.append(other)
        return found


def base_ranking(q: dict, depth: int = BASE_DEPTH, k: int = BASE_RRF_K) -> list[tuple]:
    dense = [mid for mid, _ in q["dense"][:depth]]
    sparse = [mid for mid, _ in q["sparse"][:depth]]
    return rrf([dense, sparse], k)


# Lever 1: neighbourhood expansion of strong hits --------------------------------------


def lever_expand(
    conv: Conv, q: dict, *, strong: int, radius: int, weight: float, fused=None
) -> list[str]:
    """The top ``strong`` fused hits lend ``weight`` × their score to their time neighbours
    (``radius`` turns either side within the same session); a neighbour already ranked adds
    it to its own score."""
    scored = fused is not None
    fused = fused if scored else base_ranking(q)
    scores = dict(fused)
    for mid, score in fused[:strong]:
        for other in conv.neighbours(mid, radius, 1800):
            scores[other] = max(scores.get(other, 0.0), 0.0) + weight * score
    if scored:
        return sorted(scores.items(), key=lambda i: (-i[1], i[0]))
    return [mid for mid, _ in sorted(scores.items(), key=lambda i: (-i[1], i[0]))]


# Lever 2: diversity across sessions (MMR by session) ----------------------------------


def lever_session_mmr(conv: Conv, q: dict, *, penalty: float, gap_s: float = 1800) -> list[str]:
    """Greedy: each pick's score is divided by (1 + penalty × hits already taken from its
    session)."""
    fused = base_ranking(q)
    taken: dict[int, int] = defaultdict(int)
    pool = list(fused)
    out: list[str] = []
    while pool and len(out) < 20:
        best_i, best = 0, -1.0
        for i, (mid, score) in enumerate(pool):
            adjusted = score / (1 + penalty * taken[conv.session(mid, gap_s)])
            if adjusted > best:
                best_i, best = i, adjusted
        mid, _ = pool.pop(best_i)
        taken[conv.session(mid, gap_s)] += 1
        out.append(mid)
    return out


# Lever 3: query-time date parsing ------------------------------------------------------

MONTHS = {
    m: i
    for i, m in enumerate(
        ["january", "february", "march", "april", "may", "june", "july", "august",
         "september", "october", "november", "december"],
        start=1,
    )
}  # fmt: skip
_MONTH_RE = re.compile(
    r"\b(?:in|during|of|since|from)\s+(january|february|march|april|may|june|july|august|"
    r"september|october|november|december)(?:\s*,?\s*(\d{4}))?\b",
    re.I,
)
_RELATIVE_RE = re.compile(
    r"\b(?:(last|past|previous)\s+(week|month|year)|(yesterday)|"
    r"(\d+|a|one|two|three|four|five|six)\s+(day|week|month)s?\s+ago|"
    r"(?:past|last)\s+(\d+|two|three|four|five|six)\s+(day|week|month)s)\b",
    re.I,
)
_NUM = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def parse_time_range(text: str, now: datetime) -> tuple[datetime, datetime] | None:
    """A time range the query names relative to ``now``: "in May" (the last May not after
    now, or May of the year given), "last week/month/year", "yesterday", "N days/weeks/months
    ago", "past N days/weeks/months". ``None`` when it names none."""
    found = _MONTH_RE.search(text)
    if found:
        month = MONTHS[found.group(1).lower()]
        year = int(found.group(2)) if found.group(2) else now.year
        if not found.group(2) and month > now.month:
            year -= 1
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
        return start, end
    found = _RELATIVE_RE.search(text)
    if not found:
        return None
    unit_days = {"day": 1, "week": 7, "month": 31, "year": 366}
    if found.group(1):
        span = unit_days[found.group(2).lower()]
        return now - timedelta(days=2 * span), now  # "last week": generous
    if found.group(3):
        return now - timedelta(days=2), now
    if found.group(4):
        n = _NUM.get(found.group(4).lower()) or int(found.group(4))
        span = unit_days[found.group(5).lower()]
        centre = now - timedelta(days=n * span)
        return centre - timedelta(days=span), centre + timedelta(days=span)
    n = _NUM.get(found.group(6).lower()) or int(found.group(6))
    span = unit_days[found.group(7).lower()]
    return now - timedelta(days=n * span + 1), now


def question_now(conv: Conv, q: dict) -> datetime:
    if q.get("question_date"):
        return parse_session_date(q["question_date"])
    # LoCoMo has no question date: the questions are asked after the last session.
    return max(conv.created.values()) + timedelta(days=1)


def lever_date(conv: Conv, q: dict, *, boost: float) -> tuple[list[str], bool]:
    """Candidates inside the parsed range get ``boost`` × the best fused score added
    (``boost`` = inf: a filter — only candidates in range, then the rest)."""
    fused = base_ranking(q)
    span = parse_time_range(q["question"], question_now(conv, q))
    if span is None or not fused:
        return [mid for mid, _ in fused], False
    top = fused[0][1]
    rescored = []
    for mid, score in fused:
        inside = span[0] <= conv.created[mid] < span[1]
        if boost == float("inf"):
            rescored.append((mid, (1 if inside else 0, score)))
        else:
            rescored.append((mid, (score + (boost * top if inside else 0.0),)))
    rescored.sort(key=lambda i: (tuple(-x for x in i[1]), i[0]))
    return [mid for mid, _ in rescored], True


# Lever 4: speaker/entity features in the sparse leg -----------------------------------

_ENTITY_RE = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)")
_STOP = {
    "what", "when", "where", "who", "why", "how", "which", "did", "does", "do", "is", "are",
    "was", "were", "can", "could", "would", "should", "have", "has", "had", "i", "my",
    "the", "a", "an", "in", "on", "at", "of", "for", "and", "or", "to", "any", "if", "given",
}  # fmt: skip


def query_entities(conv: Conv, text: str) -> tuple[list[str], list[str]]:
    """(speakers named in the query, other capitalised names in it)."""
    names = [n for n in _ENTITY_RE.findall(text) if n.split()[0].lower() not in _STOP]
    speakers = [s for s in conv.speakers if re.search(rf"\b{re.escape(s)}\b", text)]
    entities = [n for n in names if n not in speakers]
    return speakers, entities


def lever_entity(
    conv: Conv, q: dict, *, speaker_w: float, entity_w: float, scored: bool = False
) -> list:
    """Sparse-leg feature: a candidate whose speaker is a speaker the query names gets
    ``speaker_w``, and per other query entity its text contains ``entity_w`` (× the best
    fused score); the legs' lists are re-fused with the feature as a third ranked list when
    weights are 0 < w (ranked by feature count), else added to the score."""
    fused = base_ranking(q)
    speakers, entities = query_entities(conv, q["question"])
    if not speakers and not entities or not fused:
        return fused if scored else [mid for mid, _ in fused]
    top = fused[0][1]
    rescored = []
    for mid, score in fused:
        body = conv.content[mid]
        said = body.split("] ", 1)[-1].split(":", 1)[0]
        bonus = speaker_w * (said in speakers)
        bonus += entity_w * sum(1 for e in entities if e.lower() in body.lower())
        rescored.append((mid, score + bonus * top))
    rescored.sort(key=lambda i: (-i[1], i[0]))
    return rescored if scored else [mid for mid, _ in rescored]


# --------------------------------------------------------------------------- scoring


def score(convs: list[Conv], ranking, *, category: int | None = None) -> dict[str, Any]:
    n = any_ = all_ = 0
    for conv in convs:
        for q in conv.questions:
            if category is not None and q["category"] != category:
                continue
            evidence = q["evidence"]
            if not evidence:
                continue
            top = set(ranking(conv, q)[:10])
            wanted = {e for e in evidence if e}
            n += 1
            any_ += bool(wanted & top)
            all_ += len(wanted) == len(evidence) and wanted <= top
    if not n:
        return {"questions": 0}
    return {
        "questions": n,
        "recall_any@10": round(any_ / n, 4),
        "recall_all@10": round(all_ / n, 4),
    }


def levers() -> dict[str, Any]:
    out: dict[str, Any] = {"base": lambda c, q: [m for m, _ in base_ranking(q)]}
    for strong in (3, 5, 8, 10):
        for radius in (1, 2, 3):
            for weight in (0.2, 0.3, 0.45):
                out[f"expand_top{strong}_r{radius}_w{weight}"] = (
                    lambda c, q, s=strong, r=radius, w=weight: lever_expand(
                        c, q, strong=s, radius=r, weight=w
                    )
                )
    for penalty in (0.1, 0.25, 0.5, 1.0):
        out[f"session_mmr_p{penalty}"] = lambda c, q, p=penalty: lever_session_mmr(
            c, q, penalty=p
        )
    for boost in (0.1, 0.3, 1.0, float("inf")):
        out[f"date_boost_{boost}"] = lambda c, q, b=boost: lever_date(c, q, boost=b)[0]
    for sw, ew in ((0.1, 0.0), (0.0, 0.1), (0.1, 0.1), (0.3, 0.3), (-0.1, 0.0)):
        out[f"entity_s{sw}_e{ew}"] = lambda c, q, sw=sw, ew=ew: lever_entity(
            c, q, speaker_w=sw, entity_w=ew
        )
    for sw, ew in ((0.1, 0.1), (0.3, 0.3)):
        for strong, radius, weight in ((5, 2, 0.3), (8, 2, 0.3), (5, 3, 0.2)):
            out[f"entity_s{sw}_e{ew}+expand_top{strong}_r{radius}_w{weight}"] = (
                lambda c, q, sw=sw, ew=ew, s=strong, r=radius, w=weight: [
                    m
                    for m, _ in lever_expand(
                        c, q, strong=s, radius=r, weight=w,
                        fused=lever_entity(c, q, speaker_w=sw, entity_w=ew, scored=True),
                    )
                ]
            )  # fmt: skip
    return out


def evaluate(paths: list[str]) -> dict[str, Any]:
    splits = {}
    for path in paths:
        raw = json.loads(Path(path).read_text())
        splits[raw["data"]] = [Conv(c) for c in raw["conversations"]]
    result: dict[str, Any] = {"splits": {}, "date_parsed_questions": {}}
    for name, convs in splits.items():
        result["splits"][name] = {
            "conversations": [c.sample_id for c in convs],
            "levers": {
                lever: {
                    "all": score(convs, rank),
                    "multi_session": score(convs, rank, category=1),
                    "by_category": {
                        str(cat): score(convs, rank, category=cat) for cat in (1, 2, 3, 4)
                    },
                }
                for lever, rank in levers().items()
            },
        }
        parsed = [
            q["question"]
            for c in convs
            for q in c.questions
            if parse_time_range(q["question"], question_now(c, q)) is not None
        ]
        result["date_parsed_questions"][name] = parsed
    return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python bench/multisession_levers.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--data", required=True)
    d.add_argument("--conversations", default="")
    d.add_argument("--no-context", action="store_true")
    d.add_argument("--depth", type=int, default=100)
    d.add_argument("--out", required=True)
    e = sub.add_parser("evaluate")
    e.add_argument("--legs", action="append", required=True)
    e.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if args.cmd == "dump":
        ids = {c.strip() for c in args.conversations.split(",") if c.strip()} or None
        result = dump(
            data=args.data, ids=ids, with_context=not args.no_context, depth=args.depth
        )
    else:
        result = evaluate(args.legs)
    result["command"] = "python bench/multisession_levers.py " + " ".join(argv or sys.argv[1:])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
