"""Benchmark: the procedural-learning loop end to end, through the real API and q2 cluster.

A fleet of agents (default 20) posts execution reports (default 2 000) with recurring failure
signatures to ``POST /api/v1/executions`` on a real gunicorn server, concurrently. A real
django-q2 cluster runs the capture task for each queued report; the proposer LLM is a local
HTTP server speaking the OpenAI wire format (``tests/support/openai_server.py``) that
answers with a lesson built from the report it is shown (after ``--llm-delay`` seconds, to
stand in for a model's latency). Everything runs in a throw-away database.

Reported:

* **reports/s accepted** — reports answered 202 per second of the posting phase;
* **report → lesson latency** — p50/p95 of ``capture.completed_at - report.created_at`` over
  captures that stored a lesson (or found the agent already had it);
* **top-3 hit rate** — for every (agent, failure signature) that produced a lesson, a later
  ``POST /memories/context`` for a *similar* (reworded) task: is that lesson among the first
  three entries? Each agent also holds ``--noise`` unrelated memories and 20 topical
  facts (two about each signature's task) that compete with the lessons.

    .venv/bin/python bench/procedural.py [--agents 20] [--reports 2000] [--clients 8]
        [--llm-delay 0.05] [--noise 30] [--web-workers 2] [--q-workers 2]

Writes ``bench/results/procedural.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
from django.db import connection  # noqa: E402

from tests.support.openai_server import (  # noqa: E402
    FakeOpenAIServer,
    RecordedRequest,
    ScriptedResponse,
    chat_completion_payload,
)

RESULTS = ROOT / "bench" / "results" / "procedural.json"

# (task_type, title, error category, error message, tool, later similar-task query)
SIGNATURES = [
    (
        "deploy",
        "Deploy the billing service",
        "timeout",
        "helm upgrade timed out after 300s",
        "helm_upgrade",
        "roll out a new billing release with helm",
    ),
    (
        "migration",
        "Run database migrations for orders",
        "lock_timeout",
        "could not obtain lock on relation orders",
        "psql",
        "apply the orders schema migration",
    ),
    (
        "ci",
        "Fix the flaky integration test suite",
        "flaky_test",
        "test_checkout_flow failed intermittently on CI",
        "pytest",
        "stabilise checkout tests in CI",
    ),
    (
        "scraping",
        "Collect competitor prices",
        "rate_limited",
        "HTTP 429 Too Many Requests from the pricing site",
        "http_get",
        "gather prices from the competitor website",
    ),
    (
        "email",
        "Send the monthly invoice emails",
        "smtp_auth",
        "SMTP authentication failed for the mail relay",
        "smtp_send",
        "email customers their monthly invoices",
    ),
    (
        "report",
        "Build the quarterly revenue report",
        "memory_error",
        "pandas ran out of memory loading the sales CSV",
        "python",
        "produce the revenue spreadsheet for the quarter",
    ),
    (
        "k8s",
        "Scale the search cluster",
        "quota_exceeded",
        "namespace CPU quota exceeded while scaling pods",
        "kubectl_scale",
        "add replicas to the search deployment",
    ),
    (
        "backup",
        "Restore last night's backup to staging",
        "checksum_mismatch",
        "backup archive checksum mismatch",
        "restore_backup",
        "load the nightly backup into staging",
    ),
    (
        "translation",
        "Translate the onboarding docs to German",
        "context_overflow",
        "document exceeded the model context window",
        "llm_translate",
        "localise the onboarding guide into German",
    ),
    (
        "dns",
        "Move the marketing site to the new CDN",
        "dns_propagation",
        "DNS records not propagated after 30 minutes",
        "dns_update",
        "switch the marketing website to a different CDN",
    ),
]

# Topical distractors: facts about the same tasks that are not lessons (2 per signature);
# they compete with the lessons for the top 3 of a similar-task context request.
TOPICAL = [
    "The billing service is deployed from the infra/charts/billing helm chart.",
    "Billing releases are announced in the #releases channel.",
    "The orders database runs PostgreSQL 16 on the primary cluster.",
    "Schema migrations for orders are reviewed by the data team.",
    "The checkout integration tests live in tests/integration/checkout.",
    "CI runs on self-hosted runners labelled ci-large.",
    "The competitor price list is refreshed every Monday.",
    "Pricing data is stored in the prices bucket as CSV.",
    "Invoice emails use the invoice-v3 template.",
    "The mail relay is smtp.internal on port 587.",
    "The quarterly revenue report goes to the CFO by the 5th.",
    "Sales CSV exports are about 4 GB per quarter.",
    "The search cluster runs in the search namespace.",
    "Search pods request 2 CPUs each.",
    "Nightly backups are stored in the backups bucket for 30 days.",
    "Staging is refreshed from production backups weekly.",
    "The onboarding docs are written in Markdown in the handbook repo.",
    "German translations are reviewed by the Berlin office.",
    "The marketing site is a static site built with Hugo.",
    "DNS for the marketing domain is managed in Route 53.",
]

NOISE = [
    "Lunch orders go to the shared channel before 11:00.",
    "The design team prefers Figma links over screenshots.",
    "Ana from finance approves expenses above 500 EUR.",
    "Stand-up is at 09:30 on weekdays.",
    "The wiki lives at wiki.internal under the Engineering space.",
    "Use British spelling in customer-facing copy.",
    "Quarterly planning happens in the first week of the quarter.",
    "The office closes at 19:00 on Fridays.",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proposer_handler(request: RecordedRequest) -> ScriptedResponse:
    """A lesson built from the report the proposer is shown (deterministic)."""
    body = request.json()
    report = json.loads(body["messages"][1]["content"].split("\n", 1)[1])
    title, category = report["task_title"], report.get("error_category", "")
    message = report.get("error_message", "")
    tools = [call["name"] for call in report.get("tool_calls", [])]
    proposal = {
        "name": f"{report['task_type']}-{category}".replace("_", "-"),
        "discovery": f"When you {title.lower()}, expect {category.replace('_', ' ')}: "
        f"{message}. Prepare for it up front.",
        "condition": f"A {report['task_type']} task fails with {category}: {message}.",
        "action": f"Before calling {', '.join(tools) or 'the tool'}, check the known cause "
        f"of {category} and apply the workaround.",
        "rationale": f"{report['retry_count']} blind retries did not help; the cause is "
        "environmental and recurs.",
        "execution_steps": [
            f"Check for {category} preconditions",
            f"Run {tools[0] if tools else 'the tool'} with the workaround",
            "Verify the result",
        ],
        "confidence": 0.85,
        "tags": [report["task_type"], category],
        "scope": "agent",
    }
    delay = float(os.environ.get("BENCH_LLM_DELAY", "0"))
    return ScriptedResponse(
        json=chat_completion_payload(
            json.dumps(proposal),
            model=body.get("model", "fake"),
            prompt_tokens=400,
            completion_tokens=150,
        ),
        delay=delay,
    )


def report_body(rng: random.Random, signature) -> dict:
    task_type, title, category, message, tool, _ = signature
    roll = rng.random()
    outcome = "failed" if roll < 0.7 else ("partial" if roll < 0.8 else "succeeded")
    body = {
        "task_title": title,
        "task_type": task_type,
        "outcome": outcome,
        "tool_calls": [
            {"name": "plan", "status": "succeeded", "duration_ms": rng.randint(50, 500)},
            {
                "name": tool,
                "status": "succeeded" if outcome == "succeeded" else "failed",
                "duration_ms": rng.randint(1_000, 60_000),
                **({} if outcome == "succeeded" else {"error": category}),
            },
        ],
        "retry_count": rng.randint(0, 3),
        "turn_count": rng.randint(3, 20),
        "duration_ms": rng.randint(5_000, 300_000),
    }
    if outcome != "succeeded":
        body["error"] = {
            "category": category,
            # a secret now and then: redaction runs on every report
            "message": message + (" (token sk-" + "x" * 24 + ")" if rng.random() < 0.1 else ""),
        }
        body["recovery"] = "Retried the same command."
    else:
        body["quality_score"] = round(rng.uniform(5, 10), 1)
    return body


def percentile(values, p):
    ordered = sorted(values)
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]


def wait_until_serving(port: int) -> None:
    """Up to two minutes for the web server's health check to answer."""
    for _ in range(120):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)


def store_noise(clients: dict, rng: random.Random, noise: int) -> None:
    """Noise memories, stored through the API in one batch per agent."""
    for client in clients.values():
        batch = [
            {"content": f"{rng.choice(NOISE)} (note {i})", "category": "semantic"}
            for i in range(noise)
        ] + [{"content": fact, "category": "semantic"} for fact in TOPICAL]
        response = client.post("/memories", json={"memories": batch})
        assert response.status_code in (200, 201), response.text
    print(
        f"stored {noise} unrelated + {len(TOPICAL)} topical memories for each "
        f"of {len(clients)} agents",
        flush=True,
    )


def wait_for_captures(company, timeout: float) -> None:
    """Wait (at most ``timeout`` seconds) for the q2 cluster to drain the captures."""
    from memory.procedural.models import ExecutionCapture

    started = time.perf_counter()
    while True:
        pending = ExecutionCapture.objects.filter(
            company=company, status__in=["queued", "running"]
        ).count()
        print(f"  captures pending: {pending}", flush=True)
        if pending == 0 or time.perf_counter() - started > timeout:
            return
        time.sleep(5)


def lessons_learnt(accepted: list, captures: list) -> dict[tuple[int, int], str]:
    """(agent, signature) → the lesson memory id its first captured report gave."""
    lessons: dict[tuple[int, int], str] = {}
    capture_by_report = {str(c.report_id): c for c in captures}
    for pk, sig, report_id, _ in accepted:
        capture = capture_by_report.get(report_id)
        if capture and capture.status == "captured" and capture.memory_id:
            lessons.setdefault((pk, sig), str(capture.memory_id))
    return lessons


def lesson_hits(
    lessons: dict[tuple[int, int], str], clients: dict
) -> tuple[int, int, list[int | None]]:
    """Hit rate: a later context request for a similar, reworded task. Returns the top-3
    hits, the probes and each lesson's rank (``None``: not in the context)."""
    hits, probes, ranks = 0, 0, []
    for (pk, sig), memory_id in sorted(lessons.items()):
        query = SIGNATURES[sig][5]
        response = clients[pk].post(
            "/memories/context", json={"query": query, "token_budget": 2000}
        )
        ids = [entry["id"] for entry in response.json()["included"] if entry["kind"] == "memory"]
        probes += 1
        if memory_id in ids[:3]:
            hits += 1
        ranks.append(ids.index(memory_id) + 1 if memory_id in ids else None)
    return hits, probes, ranks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--reports", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--llm-delay", type=float, default=0.05)
    parser.add_argument("--noise", type=int, default=30, help="unrelated memories per agent")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--q-workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for q2")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="reports/s to post at (0 = as fast as the clients go); below the capture "
        "throughput the latency is the pipeline's own, above it the backlog's",
    )
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    logging.getLogger("httpx").setLevel(logging.WARNING)

    from django.test.utils import setup_test_environment

    setup_test_environment()
    from bench.scratch_db import scratch_database

    with scratch_database("procedural") as scratch_name:
        children: list[subprocess.Popen] = []
        llm = FakeOpenAIServer()
        try:
            from persistence.models import Agent, Company
            from persistence.services.agents import api_key_issue

            company = Company.objects.create(name="Bench fleet", slug="bench-fleet")
            agents = [
                Agent.objects.create(company=company, name=f"agent-{i:02d}", role="sre")
                for i in range(args.agents)
            ]
            keys = {agent.pk: api_key_issue(agent=agent).raw_key for agent in agents}
            connection.close()  # the children take over

            llm.set_handler(llm.CHAT_COMPLETIONS, proposer_handler)
            llm.start()
            db = connection.settings_dict  # the app role's login
            port = free_port()
            env = {
                **os.environ,
                "DATABASE_URL": f"postgresql://{db['USER']}@:{db['PORT']}/{scratch_name}?host={db['HOST']}",
                "SYNTHORG_LLM_BASE_URL": llm.base_url,
                "SYNTHORG_LLM_MODEL": "bench-proposer",
                "SYNTHORG_LLM_MAX_RETRIES": "0",
                "BENCH_LLM_DELAY": str(args.llm_delay),
                "Q_WORKERS": str(args.q_workers),
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
            }
            os.environ["BENCH_LLM_DELAY"] = str(args.llm_delay)
            web = [
                sys.executable,
                "-m",
                "gunicorn",
                "synthorg.wsgi:application",
                "--config",
                "python:synthorg.gunicorn_conf",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(args.web_workers),
                "--log-level",
                "warning",
            ]
            children.append(subprocess.Popen(web, cwd=ROOT, env=env))
            # Both clusters: captures are LLM work, queued on the LLM cluster's own queue.
            for cluster in ("default", "llm"):
                log = open(ROOT / "var" / f"bench_procedural_qcluster_{cluster}.log", "w")  # noqa: SIM115
                cluster_env = env if cluster == "default" else {**env, "Q_CLUSTER_NAME": "llm"}
                children.append(
                    subprocess.Popen(
                        [sys.executable, "manage.py", "qcluster"],
                        cwd=ROOT,
                        env=cluster_env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
            base = f"http://127.0.0.1:{port}/api/v1"
            print(
                f"web on :{port} ({args.web_workers} workers), q2 clusters ({args.q_workers} "
                f"workers), proposer at {llm.base_url} (delay {args.llm_delay}s)",
                flush=True,
            )
            wait_until_serving(port)
            clients = {
                pk: httpx.Client(
                    base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60
                )
                for pk, key in keys.items()
            }

            if args.noise:
                store_noise(clients, rng, args.noise)

            # Posting phase.
            plan = []
            agent_signatures = {pk: rng.sample(range(len(SIGNATURES)), 4) for pk in clients}
            for _ in range(args.reports):
                pk = rng.choice(list(clients))
                sig = rng.choice(agent_signatures[pk])
                plan.append((pk, sig, report_body(rng, SIGNATURES[sig])))
            accepted, statuses, latencies = [], {}, []
            lock = threading.Lock()
            done = [0]

            def post(numbered):
                index, (pk, sig, body) = numbered
                if args.rate > 0:  # open-loop pacing: report i leaves at t0 + i / rate
                    wait = t0 + index / args.rate - time.perf_counter()
                    if wait > 0:
                        time.sleep(wait)
                started = time.perf_counter()
                response = clients[pk].post("/executions", json=body)
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                    if response.status_code == 202:
                        accepted.append(
                            (pk, sig, response.json()["id"], response.json()["capture"])
                        )
                    done[0] += 1
                    if done[0] % 200 == 0:
                        print(f"  posted {done[0]}/{len(plan)}", flush=True)

            print(
                f"posting {len(plan)} reports with {args.clients} concurrent clients …", flush=True
            )
            t0 = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(post, enumerate(plan)))
            post_seconds = time.perf_counter() - t0
            print(
                f"accepted {len(accepted)} in {post_seconds:.1f}s "
                f"({len(accepted) / post_seconds:.1f} reports/s)",
                flush=True,
            )

            # Wait for the q2 cluster to drain the captures.
            from memory.procedural.models import ExecutionCapture

            connection.connect()
            wait_for_captures(company, args.timeout)
            drain_seconds = time.perf_counter() - t0

            captures = list(
                ExecutionCapture.objects.filter(company=company).select_related("report")
            )
            by_status: dict[str, int] = {}
            for capture in captures:
                by_status[capture.status] = by_status.get(capture.status, 0) + 1
            lesson_latency = [
                (c.completed_at - c.report.created_at).total_seconds()
                for c in captures
                if c.status == "captured" and c.completed_at
            ]
            lessons = lessons_learnt(accepted, captures)
            hits, probes, ranks = lesson_hits(lessons, clients)

            result = {
                "benchmark": "procedural",
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
                "params": vars(args),
                "reports_posted": len(plan),
                "http_statuses": {str(k): v for k, v in sorted(statuses.items())},
                "accepted": len(accepted),
                "post_seconds": round(post_seconds, 2),
                "reports_per_second_accepted": round(len(accepted) / post_seconds, 1),
                "post_latency_ms": {
                    "p50": round(1000 * percentile(latencies, 50), 1),
                    "p95": round(1000 * percentile(latencies, 95), 1),
                },
                "capture_at_submit": {
                    status: sum(1 for a in accepted if a[3] == status)
                    for status in ("queued", "not_applicable", "disabled")
                },
                "capture_final_status": by_status,
                "seconds_until_all_captures_done": round(drain_seconds, 1),
                "report_to_lesson_seconds": {
                    "n": len(lesson_latency),
                    "p50": round(percentile(lesson_latency, 50), 2) if lesson_latency else None,
                    "p95": round(percentile(lesson_latency, 95), 2) if lesson_latency else None,
                },
                "distinct_lessons": len(set(lessons.values())),
                "llm_calls": len(llm.requests_to(llm.CHAT_COMPLETIONS)),
                "top3_hit_rate": round(hits / probes, 3) if probes else None,
                "hit_probes": probes,
                "lesson_rank_histogram": {
                    str(r): ranks.count(r) for r in sorted({r for r in ranks if r is not None})
                }
                | {"missing": ranks.count(None)},
            }
            output = Path(args.output)
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(json.dumps(result, indent=2) + "\n")
            print(json.dumps(result, indent=2))
            print(f"wrote {output}")
            for client in clients.values():
                client.close()
        finally:
            for child in children:
                child.terminate()
            for child in children:
                try:
                    child.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    child.kill()
            llm.stop()
            connection.close()


if __name__ == "__main__":
    main()
