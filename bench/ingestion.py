"""Benchmark: conversation ingestion — flush throughput and flush → memory searchable latency.

Runs in a throw-away database against a local OpenAI-compatible HTTP server
(``tests/support/openai_server.py``) that answers every extraction with one fact per user
message (the real client, HTTP, JSON validation, write gate, embedding and commit all run;
only the model's "thinking" is instant). Embeddings use the product's default local model.

1. **Accepted messages/s**: ``--flushes`` ``POST /api/v1/conversations/{id}/messages`` of
   ``--batch`` messages each through the REST API (in-process DRF client: auth,
   validation, one transaction, the debounce schedule upsert), spread over 20
   conversations; no worker runs meanwhile. Reports messages/s and per-flush p50/p95.
2. **Flush → searchable**: ``--probes`` times, one message carrying a unique fact is flushed
   (``debounce_seconds: 0``) while a worker thread runs the extraction sweep
   (``conversations_extract_due``: each company's due conversations, what the sweep's
   per-company q2 tasks run) every 20 ms; the clock stops
   when ``memory_search`` returns the extracted memory. p50/p95 are pipeline latency; a
   deployment adds its ``debounce_seconds`` (default 30) and its q2 polling delay.

    .venv/bin/python bench/ingestion.py [--flushes 300] [--batch 10] [--probes 60]

Writes ``bench/results/ingestion.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from tests.support.openai_server import (  # noqa: E402
    FakeOpenAIServer,
    ScriptedResponse,
    chat_completion_payload,
)

LINE = re.compile(r"^\[(\d+)\] user: (.*)$", re.MULTILINE)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def echo_facts(request) -> ScriptedResponse:
    """One fact per user message of the prompt's conversation fence."""
    prompt = request.json()["messages"][-1]["content"]
    section = prompt.split("<conversation>", 1)[-1]
    facts = [
        {
            "content": text.strip(),
            "category": "semantic",
            "confidence": 0.9,
            "tags": [],
            "supersedes": [],
        }
        for _, text in LINE.findall(section)
        if text.strip()
    ]
    return ScriptedResponse(json=chat_completion_payload(json.dumps({"facts": facts})))


def setup(server: FakeOpenAIServer):
    from persistence.models import Agent, Company
    from persistence.services.agents import api_key_issue
    from persistence.services.companies import company_config_set

    company = Company.objects.create(name="Bench ingestion", slug="bench-ingestion")
    company_config_set(
        company=company,
        data={"memory": {"extraction": {"debounce_seconds": 0, "relevant_memories": 5}}},
    )
    agent = Agent.objects.create(company=company, name="bench-agent", memory_level="persistent")
    key = api_key_issue(agent=agent).raw_key
    settings.SYNTHORG_LLM = {
        "BASE_URL": server.base_url,
        "MODEL": "bench-model",
        "TIMEOUT": 10,
        "MAX_RETRIES": 0,
    }
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    client.get("/api/v1/me")
    return agent, client


def measure_flush(client, flushes: int, batch: int) -> dict:
    latencies = []
    started = time.perf_counter()
    for i in range(flushes):
        messages = [
            {
                "role": "user" if j % 2 == 0 else "assistant",
                "content": f"Flush {i} message {j}: the release train for team {i % 7} "
                f"leaves on day {j} with {i * j % 13} open tickets.",
            }
            for j in range(batch)
        ]
        t0 = time.perf_counter()
        response = client.post(
            f"/api/v1/conversations/tp-{i % 20}/messages", {"messages": messages}, format="json"
        )
        latencies.append((time.perf_counter() - t0) * 1000)
        if response.status_code != 202:
            raise SystemExit(f"flush answered {response.status_code}: {response.content!r}")
        if (i + 1) % 50 == 0:
            print(f"  flushed {i + 1}/{flushes}", file=sys.stderr)
    elapsed = time.perf_counter() - started
    return {
        "flushes": flushes,
        "messages_per_flush": batch,
        "messages": flushes * batch,
        "seconds": round(elapsed, 3),
        "messages_per_second": round(flushes * batch / elapsed, 1),
        "flush_ms_p50": round(percentile(latencies, 0.5), 2),
        "flush_ms_p95": round(percentile(latencies, 0.95), 2),
    }


def measure_searchable(agent, client, probes: int) -> dict:
    from memory.core.models.memory import Memory
    from memory.core.retrieval.query import MemoryQuery
    from memory.core.selectors.search import memory_search
    from memory.ingestion.models import Conversation
    from memory.ingestion.services.extraction import conversations_extract_due

    # The throughput phase left conversations pending: drain them first (not measured).
    Conversation.objects.filter(external_id__startswith="tp-").update(extraction_due_at=None)
    stop = threading.Event()
    errors = []

    def worker():
        try:
            while not stop.is_set():
                conversations_extract_due()
                stop.wait(0.02)
        except Exception as exc:  # surfaced after the run
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    latencies, timeouts = [], 0
    try:
        for i in range(probes):
            # Three tokens unique to the probe: no probe is a near duplicate of another
            # (the write gate would answer NOOP and the probe's own text never appear).
            a, b, c = (uuid.uuid4().hex[:7] for _ in range(3))
            text = f"Probe {i}: codename {a} is owned by {b} and ships artifact {c}."
            t0 = time.perf_counter()
            response = client.post(
                f"/api/v1/conversations/lat-{i % 5}/messages",
                {"messages": [{"role": "user", "content": text}]},
                format="json",
            )
            assert response.status_code == 202, response.content
            found = False
            # Poll cheaply for the committed, embedded row (what makes it searchable), then
            # confirm through the search pipeline (polling with searches would compete with
            # the worker for the two cores).
            live = Memory.objects.filter(agent=agent, content=text, embedding_status="ready")
            while time.perf_counter() - t0 < 30:
                if live.exists():
                    hits = memory_search(agent=agent, query=MemoryQuery(text=text, limit=3)).hits
                    if any(hit.memory.content == text for hit in hits):
                        found = True
                        break
                time.sleep(0.005)
            if found:
                latencies.append((time.perf_counter() - t0) * 1000)
            else:
                timeouts += 1
            if (i + 1) % 10 == 0:
                print(f"  probe {i + 1}/{probes}", file=sys.stderr)
    finally:
        stop.set()
        thread.join(timeout=60)
    if errors:
        raise errors[0]
    return {
        "probes": probes,
        "found": len(latencies),
        "timeouts_30s": timeouts,
        "searchable_ms_p50": round(percentile(latencies, 0.5), 1),
        "searchable_ms_p95": round(percentile(latencies, 0.95), 1),
        "searchable_ms_mean": round(statistics.fmean(latencies), 1) if latencies else None,
        "worker": "in-process thread running conversations_extract_due every 20 ms",
        "debounce_seconds": 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flushes", type=int, default=300)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--probes", type=int, default=60)
    args = parser.parse_args()

    setup_test_environment()

    from bench.scratch_db import scratch_database

    with scratch_database("ingestion"):
        with FakeOpenAIServer(embedding_dims=384) as server:
            server.set_handler(server.CHAT_COMPLETIONS, echo_facts)
            agent, client = setup(server)
            print("phase 1: flush throughput", file=sys.stderr)
            throughput = measure_flush(client, args.flushes, args.batch)
            print(f"  {throughput}", file=sys.stderr)
            print("phase 2: flush → searchable", file=sys.stderr)
            searchable = measure_searchable(agent, client, args.probes)
            print(f"  {searchable}", file=sys.stderr)
            llm_calls = len(server.requests_to(server.CHAT_COMPLETIONS))
        out = {
            "benchmark": "ingestion",
            "command": "python bench/ingestion.py " + " ".join(sys.argv[1:]),
            "flush": throughput,
            "flush_to_searchable": searchable,
            "llm_calls": llm_calls,
            "embedder": settings.SYNTHORG_DEFAULT_EMBEDDER,
            "load_average": list(os.getloadavg()),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "postgres": connection.cursor().connection.info.server_version,
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        target = ROOT / "bench" / "results" / "ingestion.json"
        target.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
