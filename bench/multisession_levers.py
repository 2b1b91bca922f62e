"""Multi-session recall levers (issue 24 item 2), measured on the real legs, compared offline.

``dump``: every conversation of ``--data`` is ingested once through ``memory_store_batch``
(the product's default config; turns with the previous turn as context unless
``--no-context``), and every question's dense and sparse ranked lists are recorded at
``--depth`` exactly as ``run_legs`` computes them for ``memory_search``, together with each
memory's ``dia_id``, ``created_at`` and content. ``evaluate``: the product's fusion (RRF,
``rrf_k`` 10, each leg cut to the depth a ``limit`` 20 search uses) is the baseline, and
every lever re-ranks the same lists (plus, for expansion, the time neighbours a SQL lookup
by ``created_at`` would return), so each lever is compared on identical candidates. The
dumps hold the data's text: they go under ``var/`` (git-ignored), never into the project::

    python bench/multisession_levers.py dump --data ../shared/bench-data/locomo_dev.json \\
        --out var/multisession/legs_locomo.json
    python bench/multisession_levers.py evaluate \\
        --legs var/multisession/legs_locomo.json \\
        --legs var/multisession/legs_lme.json \\
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
    from memory.core.selectors.search.scope import private_part, scope_filters
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
            parts = [private_part(company.pk, agent.pk)]
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
        self.created = {mid: datetime.fromisoformat(v[1]) for mid, v in raw["memories"].items()}
        self.content = {mid: v[2] for mid, v in raw["memories"].items()}
        self.dia = {mid: v[0] for mid, v in raw["memories"].items()}
        self.timeline = sorted(self.created, key=lambda mid: (self.created[mid], mid))
        self.position = {mid: i for i, mid in enumerate(self.timeline)}
        self.questions = raw["questions"]

    def speaker(self, mid: str) -> str:
        """The turn's speaker: ``"[<date>] <speaker>: <text>"`` (bench/locomo.py's format)."""
        return self.content[mid].split("] ", 1)[-1].split(":", 1)[0]

    def session(self, mid: str, gap_s: float = 1800) -> int:
        """A session = a run of memories no more than ``gap_s`` apart (what the product can
        know: ``created_at``, not the benchmark's session ids)."""
        if not hasattr(self, "_sessions"):
            self._sessions: dict[float, dict[str, int]] = {}
        if gap_s not in self._sessions:
            ids, current, previous = {}, 0, None
            for m in self.timeline:
                if (
                    previous is not None
                    and (self.created[m] - self.created[previous]).total_seconds() > gap_s
                ):
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
    """The product's fusion (:func:`synthorg.retrieval.fusion.rrf_fuse`, normalised)."""
    from synthorg.retrieval.fusion import rrf_fuse

    dense = [mid for mid, _ in q["dense"][:depth]]
    sparse = [mid for mid, _ in q["sparse"][:depth]]
    return rrf_fuse([dense, sparse], k=k)


# Lever 1: neighbourhood expansion of strong hits --------------------------------------


def expand_neighbours(fused, neighbours, *, hits: int, weight: float) -> list[tuple]:
    """The ``hits`` best fused entries each add ``weight`` × their score to their neighbours
    (new entries join); scores over 1 are rescaled so the best is 1; stable re-sort."""
    if hits < 1 or weight <= 0 or not fused:
        return list(fused)
    scores = dict(fused)
    for key, score in fused[:hits]:
        for other in neighbours.get(key, ()):
            if other != key:
                scores[other] = scores.get(other, 0.0) + weight * score
    scale = max(1.0, max(scores.values()))
    order = {key: i for i, key in enumerate(scores)}
    ranked = sorted(scores, key=lambda key: (-scores[key], order[key]))
    return [(key, scores[key] / scale) for key in ranked]


def lever_expand(
    conv: Conv,
    q: dict,
    *,
    strong: int,
    radius: int,
    weight: float,
    fused=None,
    window_s: float = 1800,
) -> list:
    """Expansion (:func:`expand_neighbours`): the top ``strong`` fused hits lend ``weight``
    × their score to the ``radius`` memories stored before and after them within
    ``window_s`` seconds (what a ``created_at`` lookup would return)."""
    scored = fused is not None
    fused = fused if scored else base_ranking(q)
    around = {mid: conv.neighbours(mid, radius, window_s) for mid, _ in fused[:strong]}
    expanded = expand_neighbours(fused, around, hits=strong, weight=weight)
    return expanded if scored else [mid for mid, _ in expanded]


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


def lever_session_cap(conv: Conv, q: dict, *, cap: int, gap_s: float = 1800) -> list[str]:
    """At most ``cap`` hits per session in the top 10; the rest follow in fused order."""
    fused = base_ranking(q)
    taken: dict[int, int] = defaultdict(int)
    head, tail = [], []
    for mid, _ in fused:
        session = conv.session(mid, gap_s)
        if len(head) < 10 and taken[session] < cap:
            taken[session] += 1
            head.append(mid)
        else:
            tail.append(mid)
    return head + tail


def lever_expand_candidates(
    conv: Conv, q: dict, *, strong: int, radius: int, weight: float
) -> list[str]:
    """Expansion that only re-scores rows a leg already found (no new entries)."""
    fused = base_ranking(q)
    found = {mid for mid, _ in fused}
    around = {
        mid: [n for n in conv.neighbours(mid, radius, 1800) if n in found]
        for mid, _ in fused[:strong]
    }
    return [mid for mid, _ in expand_neighbours(fused, around, hits=strong, weight=weight)]


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


_FIRST_PERSON = re.compile(r"\b(I|my|me|mine|myself)\b")
_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself)\b", re.I)


def query_entities(conv: Conv, text: str) -> tuple[list[str], list[str]]:
    """(speakers the query is about, other capitalised names in it). A question in the first
    person is about the user's own turns (LongMemEval's speaker ``User``)."""
    names = [n for n in _ENTITY_RE.findall(text) if n.split()[0].lower() not in _STOP]
    speakers = [s for s in conv.speakers if re.search(rf"\b{re.escape(s)}\b", text)]
    if "User" in conv.speakers and _FIRST_PERSON.search(text) and "User" not in speakers:
        speakers.append("User")
    if "Assistant" in conv.speakers and _SECOND_PERSON.search(text):
        speakers.append("Assistant")
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
    if (not speakers and not entities) or not fused:
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


def lever_speaker(conv: Conv, q: dict, *, weight: float) -> list[str]:
    """The product's speaker feature (:func:`memory.core.retrieval.speakers.boost_speakers`)
    on the ``speaker:`` tag each turn is stored with (the turn's speaker)."""
    from memory.core.retrieval.speakers import boost_speakers, speaker_tag

    fused = base_ranking(q)
    tags = {mid: [speaker_tag(conv.speaker(mid))] for mid, _ in fused if conv.speaker(mid)}
    return [m for m, _ in boost_speakers(fused, tags, query=q["question"], weight=weight)]


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
    for strong, radius, weight in ((3, 2, 0.2), (5, 2, 0.2), (5, 2, 0.3), (8, 2, 0.2)):
        out[f"expand_candidates_top{strong}_r{radius}_w{weight}"] = (
            lambda c, q, s=strong, r=radius, w=weight: lever_expand_candidates(
                c, q, strong=s, radius=r, weight=w
            )
        )
    for cap in (2, 3, 4, 5, 6):
        out[f"session_cap_{cap}"] = lambda c, q, n=cap: lever_session_cap(c, q, cap=n)
    for penalty in (0.02, 0.05, 0.1, 0.25, 0.5, 1.0):
        out[f"session_mmr_p{penalty}"] = lambda c, q, p=penalty: lever_session_mmr(c, q, penalty=p)
    for boost in (0.1, 0.3, 1.0, float("inf")):
        out[f"date_boost_{boost}"] = lambda c, q, b=boost: lever_date(c, q, boost=b)[0]
    for weight in (0.1, 0.2, 0.3, 0.5, 0.7, 1.0):
        out[f"speaker_boost_{weight}"] = lambda c, q, w=weight: lever_speaker(c, q, weight=w)
    for sw, ew in ((0.1, 0.0), (0.2, 0.0), (0.3, 0.0), (0.5, 0.0), (0.0, 0.1), (0.1, 0.1),
                   (0.3, 0.3), (-0.1, 0.0)):  # fmt: skip
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
        # several dumps of one data file (e.g. a subset, then the rest) pool into one split
        splits.setdefault(raw["data"], []).extend(Conv(c) for c in raw["conversations"])
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
        # a count, not the questions: the data's text never goes into the project
        result["date_parsed_questions"][name] = sum(
            1
            for c in convs
            for q in c.questions
            if parse_time_range(q["question"], question_now(c, q)) is not None
        )
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
        result = dump(data=args.data, ids=ids, with_context=not args.no_context, depth=args.depth)
    else:
        result = evaluate(args.legs)
    result["command"] = "python bench/multisession_levers.py " + " ".join(argv or sys.argv[1:])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
