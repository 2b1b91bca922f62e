"""LoCoMo through conversation ingestion: flush → LLM extraction → recall on the extracted
memories. For operators with a model; not run in CI (it calls a real LLM for every batch).

Each LoCoMo conversation becomes one agent. Its sessions are flushed in order (one message
per turn: role ``user``, ``name`` = the speaker, ``created_at`` = the session's time), each
flush is extracted at once (``conversation_extract``, the service the debounced q2 task
calls, in batches of ``--batch-tokens``) through the OpenAI-compatible endpoint in
``SYNTHORG_LLM_BASE_URL`` (+ ``SYNTHORG_LLM_MODEL``, ``SYNTHORG_LLM_API_KEY``). Then every
question (categories 1–4) is searched over the agent's memories — only extracted facts, no
raw turns — as ``bench/retrieval.py`` does.

Scoring: a memory "covers" the turns its extraction run read (its provenance
``message_ids`` → LoCoMo ``dia_id``). ``recall_any@k``: some evidence turn is covered by one
of the top-k memories; ``recall_all@k``: all are. Coverage is per extraction batch, so a
smaller ``--batch-tokens`` makes the score stricter; compare runs at the same setting.

    SYNTHORG_LLM_BASE_URL=http://localhost:11434/v1 SYNTHORG_LLM_MODEL=qwen2.5:7b \\
    .venv/bin/python bench/locomo_extraction.py --data ../shared/bench-data/locomo_dev.json \\
        [--conversations conv-26] [--batch-tokens 600] [--k 1,5,10,20] \\
        [--out bench/results/locomo_extraction.json]

``--echo-llm`` replaces the endpoint by the test server answering one fact per message
(turn text verbatim): a plumbing check of the pipeline, not a measurement of a model.
Runs in a throw-away database (``bench_locomo_extraction``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from bench.locomo import SCORED_CATEGORIES, log, parse_session_date, percentile  # noqa: E402

RETRIEVAL = {"fusion_strategy": "rrf", "rrf_k": 10, "min_relevance": 0.0}
LINE = re.compile(r"^\[(\d+)\] user \([^)]*\): (.*)$", re.MULTILINE)


def sessions(sample: dict):
    conv = sample["conversation"]
    index = 1
    while f"session_{index}" in conv:
        start = parse_session_date(conv[f"session_{index}_date_time"])
        yield conv[f"session_{index}_date_time"], start, conv[f"session_{index}"]
        index += 1


def echo_handler(request):
    from tests.support.openai_server import ScriptedResponse, chat_completion_payload

    prompt = request.json()["messages"][-1]["content"].split("<conversation>", 1)[-1]
    facts = [
        {
            "content": text.strip()[:1900],
            "category": "episodic",
            "confidence": 0.9,
            "tags": [],
            "supersedes": [],
        }
        for _, text in LINE.findall(prompt)
        if text.strip()
    ]
    return ScriptedResponse(json=chat_completion_payload(json.dumps({"facts": facts})))


def session_messages(date_text: str, start, session: list[dict]) -> list:
    """One LoCoMo session's turns as messages, a second apart, each prefixed with its date
    (an image's caption appended)."""
    from memory.ingestion.domain import MessageIn

    messages = []
    for position, turn in enumerate(session):
        text = turn["text"]
        if turn.get("blip_caption"):
            text += f" [shares image: {turn['blip_caption']}]"
        messages.append(
            MessageIn(
                role="user",
                name=turn["speaker"][:200],
                content=f"[{date_text}] {text}",
                created_at=start + timedelta(seconds=position),
            )
        )
    return messages


def extract_all(conversation, sample_id: str, runs_by_status: dict[str, int]) -> None:
    """Extraction runs until the conversation is extracted through its last message (or a
    run fails), counting the runs by status."""
    from memory.ingestion.models import ExtractionRun
    from memory.ingestion.services.extraction import conversation_extract

    while True:
        run_ = conversation_extract(conversation=conversation, force=True)
        if run_ is None:
            return
        runs_by_status[run_.status] += 1
        if run_.status != ExtractionRun.Status.SUCCEEDED:
            log(f"{sample_id}: run {run_.pk} {run_.status}: {run_.reason}")
            return
        conversation.refresh_from_db()
        if conversation.extracted_through_seq >= conversation.message_count:
            return


def run(args) -> dict:
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search
    from memory.ingestion.models import Conversation, ExtractedFact
    from memory.ingestion.services.messages import conversation_messages_append
    from persistence.models import Agent, Company

    data = json.loads(Path(args.data).read_text())
    wanted = set(args.conversations.split(",")) if args.conversations else None
    ks = tuple(int(k) for k in args.k.split(","))
    max_k = max(ks)
    hits_any = dict.fromkeys(ks, 0)
    hits_all = dict.fromkeys(ks, 0)
    by_category = defaultdict(lambda: {"count": 0, "any": 0})
    questions = skipped = turns = memories = 0
    extract_seconds = 0.0
    search_ms: list[float] = []
    runs_by_status: dict[str, int] = defaultdict(int)
    for sample in data:
        if wanted and sample["sample_id"] not in wanted:
            continue
        company = Company.objects.create(
            name=f"locomo {sample['sample_id']}",
            slug=f"locomo-{sample['sample_id']}".lower(),
            config={
                "memory": {
                    "retrieval": RETRIEVAL,
                    "extraction": {
                        "max_batch_tokens": args.batch_tokens,
                        "min_confidence": args.min_confidence,
                    },
                }
            },
        )
        agent = Agent.objects.create(
            company=company, name=f"locomo-{sample['sample_id']}", memory_level="persistent"
        )
        dia_of_message: dict[int, str] = {}
        started = time.perf_counter()
        for date_text, start, session in sessions(sample):
            result = conversation_messages_append(
                agent=agent,
                conversation_id="locomo",
                messages=session_messages(date_text, start, session),
            )
            for message_id, turn in zip(result.message_ids, session, strict=True):
                dia_of_message[message_id] = turn["dia_id"]
            conversation = Conversation.objects.select_related("agent", "company").get(
                agent=agent, external_id="locomo"
            )
            extract_all(conversation, sample["sample_id"], runs_by_status)
            turns += len(session)
            log(f"{sample['sample_id']}: {date_text}: {len(session)} turns flushed and extracted")
        extract_seconds += time.perf_counter() - started
        covered: dict = defaultdict(set)
        for fact in ExtractedFact.objects.filter(run__agent=agent, memory_id__isnull=False):
            covered[fact.memory_id].update(dia_of_message.get(m) for m in fact.message_ids)
        memories += len(covered)
        for qa in sample["qa"]:
            if qa.get("category") not in SCORED_CATEGORIES:
                continue
            evidence = set(qa.get("evidence") or [])
            if not evidence:
                skipped += 1
                continue
            t0 = time.perf_counter()
            hits = memory_search(
                agent=agent, query=MemoryQuery(text=str(qa["question"]), limit=max_k)
            ).hits
            search_ms.append((time.perf_counter() - t0) * 1000)
            ranked = [hit.memory.pk for hit in hits]
            questions += 1
            category = int(qa["category"])
            by_category[category]["count"] += 1
            for k in ks:
                seen = set().union(*(covered.get(mid, set()) for mid in ranked[:k]))
                hits_any[k] += bool(evidence & seen)
                hits_all[k] += evidence <= seen
                if k == 10:
                    by_category[category]["any"] += bool(evidence & seen)
        log(f"{sample['sample_id']}: {len(covered)} memories, questions asked")

    def ratio(n):
        return round(n / questions, 4) if questions else 0.0

    return {
        "questions": questions,
        "skipped_without_evidence": skipped,
        "recall_any": {str(k): ratio(hits_any[k]) for k in ks},
        "recall_all": {str(k): ratio(hits_all[k]) for k in ks},
        "by_category": {
            str(c): {
                "count": v["count"],
                "recall_any@10": round(v["any"] / v["count"], 4) if v["count"] else 0.0,
            }
            for c, v in sorted(by_category.items())
        },
        "turns": turns,
        "memories_extracted": memories,
        "extraction_runs": dict(runs_by_status),
        "flush_and_extract_seconds": round(extract_seconds, 1),
        "search_ms": {
            "p50": round(percentile(search_ms, 50), 2),
            "p95": round(percentile(search_ms, 95), 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--conversations", default="")
    parser.add_argument("--batch-tokens", type=int, default=600)
    parser.add_argument("--min-confidence", type=float, default=0.5)
    parser.add_argument("--k", default="1,5,10,20")
    parser.add_argument("--echo-llm", action="store_true")
    parser.add_argument("--out", default="bench/results/locomo_extraction.json")
    args = parser.parse_args()

    setup_test_environment()

    from bench.scratch_db import scratch_database

    with scratch_database("locomo_extraction"):
        server = None
        try:
            if args.echo_llm:
                from tests.support.openai_server import FakeOpenAIServer

                server = FakeOpenAIServer(embedding_dims=384)
                server.start()
                server.set_handler(server.CHAT_COMPLETIONS, echo_handler)
                settings.SYNTHORG_LLM = {
                    **settings.SYNTHORG_LLM,
                    "BASE_URL": server.base_url,
                    "MODEL": "echo",
                    "MAX_RETRIES": 0,
                }
            llm = settings.SYNTHORG_LLM
            if not llm.get("BASE_URL"):
                raise SystemExit(
                    "set SYNTHORG_LLM_BASE_URL (and SYNTHORG_LLM_MODEL), or --echo-llm"
                )
            result = run(args)
            result.update(
                {
                    "benchmark": "locomo_extraction",
                    "command": "python bench/locomo_extraction.py " + " ".join(sys.argv[1:]),
                    "llm": {
                        "base_url": llm["BASE_URL"],
                        "model": llm.get("MODEL") or "(discovered)",
                        "echo": args.echo_llm,
                    },
                    "batch_tokens": args.batch_tokens,
                    "data": Path(args.data).name,
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                    "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
                }
            )
            target = ROOT / args.out
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(result, indent=2) + "\n")
            log(f"recall_any {result['recall_any']} recall_all {result['recall_all']}")
            log(f"wrote {args.out}")
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
