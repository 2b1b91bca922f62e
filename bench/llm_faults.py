"""LLM faults, run from outside: one company's model hangs, then the LLM is down and recovers.

    .venv/bin/python bench/llm_faults.py                 # JSON in bench/results/llm_faults.json
    .venv/bin/python bench/llm_faults.py --reports 6 --webhooks 20

Everything runs against a **throw-away embedded PostgreSQL** in a temporary directory
(``SYNTHORG_PGDATA``, as ``bench/recovery.py`` does), with ``manage.py serve`` (web, the
default q2 cluster and the LLM cluster, each with its default two workers), the strict
OpenAI-compatible stand-in (``tests/support/llm_provider.py``) as the server's only LLM
(base URL only: the model Search-and-Ask uses is discovered, the first one listed,
``model-a``) and a local webhook receiver. Three companies: **A** names ``model-a`` as its
procedural model, **B** and **C** name ``model-b``; B and C have an approval webhook.

1. **Hang** (``model-a`` accepts requests and never answers; every other model answers):
   A's agent posts ``--reports`` failure reports (A's captures hold the LLM cluster as long
   as A's slots let them), then B and C post ``--reports`` failure reports each and their
   agents ask for ``--webhooks`` approvals each, spread over the phase. Measured: (a) B's and
   C's webhook delivery latency (from the 201 of ``POST /approvals`` to the receiver seeing
   the delivery) p50/p95/max, target p95 < 5 s; (b) B's and C's captures: how many ended
   ``captured`` with method ``llm`` and the time from the 202 to the ``captured`` status row
   (p50/p95/max); (c) a Search-and-Ask request (``tool_based`` strategy) by A's agent: its
   latency against ``SYNTHORG_LLM_REQUEST_BUDGET`` and the ``degraded`` it answered with.
2. **Outage** (every model answers 503): B and C post ``--reports`` failure reports each,
   one per company at a time, the next once the previous capture failed (after the client's
   retries), so each capture meets the outage (one posted while its company's slot is busy
   would be deferred, ``queued`` and uncharged, instead). Then the stand-in recovers; the
   bench **advances
   the clock** — it sets the failed and deferred captures' ``next_attempt_at`` and the
   ``jobs-procedural.capture`` schedule's ``next_run`` to now instead of waiting out the
   back-off — and waits for the service's own retry to run: (d) the share of the failed
   captures (and of all) that end ``captured`` with method ``llm``, target 100 %.

The LLM timeouts are shortened (``SYNTHORG_LLM_TIMEOUT``/``TOTAL_TIMEOUT``, in the JSON) so
the hanging calls end within the bench; everything else is the service's defaults.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.serve_process import free_port, stop_serve, throwaway_database  # noqa: E402

# Before Django builds its settings: this process and serve use the throw-away server.
WORK, PGDATA = throwaway_database("synthorg-llm-faults-")

import django  # noqa: E402

from tests.support.llm_provider import PROFILES, Fault, LLMProviderStandIn  # noqa: E402
from tests.support.openai_server import ScriptedResponse  # noqa: E402

WEBHOOK_P95_TARGET_S = 5.0
LLM_TIMEOUT_S = 10
LLM_TOTAL_TIMEOUT_S = 20
HANGING_MODEL, ANSWERING_MODEL = "model-a", "model-b"
# OpenAI's overloaded answer, for every model while the outage lasts.
OVERLOADED = ScriptedResponse(
    status=503,
    json={
        "error": {
            "message": "The server is overloaded or not ready yet.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    },
)
PROFILE = replace(
    PROFILES["openai"], models=(HANGING_MODEL, ANSWERING_MODEL), server_error=OVERLOADED
)
REPORT = {
    "task_title": "Deploy billing service",
    "task_type": "deploy",
    "outcome": "failed",
    "error": {"category": "timeout", "message": "helm upgrade timed out after 300s"},
    "tool_calls": [
        {"name": "helm_upgrade", "status": "failed", "error": "timeout", "duration_ms": 300000}
    ],
    "retry_count": 2,
    "turn_count": 9,
    "duration_ms": 312000,
    "recovery": "Retried twice with the same timeout.",
}
PROPOSAL = {
    "name": "helm-upgrade-timeouts",
    "discovery": "Helm upgrades of the billing service time out at 300s; raise --timeout.",
    "condition": "A helm upgrade of a large chart times out at the default 300s.",
    "action": "Run helm upgrade with --timeout 900s and --atomic.",
    "rationale": "The billing chart runs migrations in a pre-upgrade hook that takes ~6 min.",
    "execution_steps": ["Check the hook duration", "Re-run with --timeout 900s --atomic"],
    "confidence": 0.9,
    "tags": ["helm", "deploy"],
    "scope": "agent",
}


def log(message: str) -> None:
    print(f"[llm_faults {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def model_answer(body: dict) -> str:
    """The stand-in's answer: a lesson proposal for captures, a verdict or a query else."""
    system = next((m["content"] for m in body.get("messages", []) if m["role"] == "system"), "")
    if '"sufficient"' in system:
        return json.dumps({"sufficient": False})
    if "rewrite a memory-search query" in system:
        return "billing deploy schedule"
    return json.dumps(PROPOSAL)


def percentiles(values: list[float]) -> dict:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 3),
        "p95": round(p95, 3),
        "max": round(ordered[-1], 3),
    }


def poll(condition, timeout: float, interval: float = 0.25):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    return None


class WebhookReceiver:
    """Records when each approval webhook arrives (``time.time()``), by approval item id."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                arrived = time.time()
                item_id = json.loads(body)["item"]["id"]
                with receiver.lock:
                    receiver.arrivals.setdefault(item_id, arrived)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> WebhookReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.server.shutdown()
        self.server.server_close()


class Api:
    """One agent's HTTP client (a new connection per request, like recovery's clients)."""

    def __init__(self, port: int, key: str) -> None:
        self.port, self.key = port, key

    def call(self, method: str, path: str, body: dict | None = None, timeout: float = 120):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(
                method,
                f"/api/v1{path}",
                body=json.dumps(body) if body is not None else None,
                headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            return response.status, json.loads(response.read() or b"null")
        finally:
            conn.close()


def healthz(port: int) -> int | None:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/healthz")
        status = conn.getresponse().status
        conn.close()
        return status
    except OSError:
        return None


def seed(webhook_url: str) -> dict[str, str]:
    """Companies A (``model-a``), B and C (``model-b``, with a webhook); one agent key each."""
    from django.core.management import call_command

    from orgmemory.services.webhooks import webhook_configure
    from persistence.models import Company
    from persistence.services.agents import agent_create, api_key_issue
    from persistence.services.companies import company_config_set

    keys = {}
    for name, model in (("a", HANGING_MODEL), ("b", ANSWERING_MODEL), ("c", ANSWERING_MODEL)):
        company = Company.objects.create(name=f"Company {name.upper()}", slug=f"company-{name}")
        config = {"memory": {"procedural": {"model": model}}}
        if name == "a":  # Search-and-Ask: the LLM checks the results and reformulates
            config["memory"]["retrieval"] = {
                "strategy": "tool_based",
                "query_reformulation_enabled": True,
                "max_reformulation_rounds": 1,
            }
        company_config_set(company=company, data=config)
        if name != "a":
            webhook_configure(
                company=company, url=webhook_url, secret=f"secret-{name}", principal=None
            )
        agent = agent_create(company=company, name=f"agent-{name}", memory_level="persistent")
        keys[name] = api_key_issue(agent=agent).raw_key
    call_command("sync_schedules", verbosity=0)
    return keys


def post_reports(api: Api, label: str, count: int) -> dict[str, float]:
    """``count`` failure reports; returns report id → time of the 202."""
    accepted = {}
    for n in range(count):
        body = {**REPORT, "task_type": f"deploy-{label}-{n}", "task_title": f"Deploy {label} {n}"}
        status, payload = api.call("POST", "/executions", body)
        if status != 202:
            raise SystemExit(f"POST /executions answered {status}: {payload}")
        accepted[payload["id"]] = time.time()
    return accepted


def capture_outcomes(accepted: dict[str, float]) -> dict[str, dict]:
    """Each report's capture: status, method and the seconds from its 202 to ``captured``."""
    from memory.procedural.models import CaptureStatusChange, ExecutionCapture

    captures = {
        str(c.report_id): c for c in ExecutionCapture.objects.filter(report_id__in=list(accepted))
    }
    captured_at = {}
    for change in CaptureStatusChange.objects.filter(
        report_id__in=list(accepted), status="captured"
    ).order_by("id"):
        captured_at.setdefault(str(change.report_id), change.created_at.timestamp())
    return {
        report_id: {
            "status": captures[report_id].status if report_id in captures else None,
            "method": captures[report_id].method if report_id in captures else None,
            "to_captured_s": (
                captured_at[report_id] - accepted[report_id] if report_id in captured_at else None
            ),
        }
        for report_id in accepted
    }


def ask_approvals(apis: dict[str, Api], count: int, spacing: float) -> dict[str, float]:
    """``count`` approval requests per agent, ``spacing`` s apart; item id → time of the 201."""
    sent = {}
    for n in range(count):
        for label, api in apis.items():
            body = {
                "action_type": "deploy",
                "title": f"Deploy {label} #{n}",
                "risk_level": "low",
            }
            status, payload = api.call("POST", "/approvals", body)
            if status != 201:
                raise SystemExit(f"POST /approvals answered {status}: {payload}")
            sent[payload["id"]] = time.time()
        time.sleep(spacing)
    return sent


def search_and_ask(api: Api) -> dict:
    status, stored = api.call(
        "POST",
        "/memories",
        {"content": "Billing deploys every Friday at noon UTC.", "category": "semantic"},
    )
    if status != 201:
        raise SystemExit(f"POST /memories answered {status}: {stored}")
    start = time.monotonic()
    status, payload = api.call(
        "POST",
        "/memories/tools/call",
        {"name": "search_memory", "arguments": {"query": "When do we deploy billing?"}},
    )
    latency = time.monotonic() - start
    data = (payload or {}).get("data", {})
    return {
        "status": status,
        "latency_s": round(latency, 3),
        "degraded": data.get("degraded"),
        "results": len(data.get("results", [])),
        "found_the_stored_memory": stored["id"]
        in [r["memory"]["id"] for r in data.get("results", [])],
    }


def hang_phase(llm, apis: dict[str, Api], receiver, args) -> dict:
    llm.hanging_models = {HANGING_MODEL}
    log(f"hang: {HANGING_MODEL} hangs; A posts {args.reports} failure reports")
    a_accepted = post_reports(apis["a"], "a", args.reports)
    time.sleep(2)  # A's captures have reached the LLM cluster first
    others = {label: apis[label] for label in ("b", "c")}
    log(f"hang: B and C post {args.reports} failure reports each and ask for approvals")
    accepted: dict[str, float] = {}
    for label, api in others.items():
        accepted.update(post_reports(api, label, args.reports))
    sent: dict[str, float] = {}
    asker = threading.Thread(
        target=lambda: sent.update(ask_approvals(others, args.webhooks, args.webhook_spacing))
    )
    asker.start()
    log("hang: Search-and-Ask by A's agent (its LLM steps use the discovered model-a)")
    ask = search_and_ask(apis["a"])
    log(f"hang: Search-and-Ask answered {ask['status']} in {ask['latency_s']} s: {ask['degraded']}")
    asker.join()

    def settled():
        outcomes = capture_outcomes(accepted)
        done = sum(1 for o in outcomes.values() if o["status"] not in ("queued", "running"))
        with receiver.lock:
            arrived = sum(1 for item_id in sent if item_id in receiver.arrivals)
        log(f"hang: {done}/{len(accepted)} captures done, {arrived}/{len(sent)} webhooks in")
        return done == len(accepted) and arrived == len(sent)

    poll(settled, args.phase_timeout, 2.0)
    outcomes = capture_outcomes(accepted)
    with receiver.lock:
        latencies = [receiver.arrivals[i] - t for i, t in sent.items() if i in receiver.arrivals]
    a_outcomes = capture_outcomes(a_accepted)
    hanging_requests = sum(
        1 for r in llm.chat_requests if r.json().get("model") == HANGING_MODEL
    )  # every call A's work and Search-and-Ask made to the hanging model
    webhooks = {
        "sent": len(sent),
        "delivered": len(latencies),
        "latency_s": percentiles(latencies),
        "target_p95_s": WEBHOOK_P95_TARGET_S,
    }
    webhooks["within_target"] = (
        webhooks["delivered"] == webhooks["sent"]
        and webhooks["latency_s"]["p95"] is not None
        and webhooks["latency_s"]["p95"] < WEBHOOK_P95_TARGET_S
    )
    llm_captures = [
        o for o in outcomes.values() if (o["status"], o["method"]) == ("captured", "llm")
    ]
    return {
        "webhooks_b_c": webhooks,
        "captures_b_c": {
            "reports": len(outcomes),
            "captured_llm": len(llm_captures),
            "statuses": _count(f"{o['status']}/{o['method'] or '-'}" for o in outcomes.values()),
            "to_captured_s": percentiles([o["to_captured_s"] for o in llm_captures]),
        },
        "captures_a_while_hanging": {
            "reports": len(a_outcomes),
            "statuses": _count(f"{o['status']}/{o['method'] or '-'}" for o in a_outcomes.values()),
            "calls_to_hanging_model": hanging_requests,
        },
        "search_and_ask_a": ask,
    }


def outage_phase(llm, apis: dict[str, Api], args) -> dict:
    from django.db import connection
    from django.utils import timezone
    from django_q.models import Schedule

    from memory.procedural.models import ExecutionCapture
    from synthorg.jobs.registry import schedule_name
    from synthorg.schedules import SCHEDULE_PREFIX

    retry_schedule = schedule_name("procedural.capture")

    llm.hanging_models = set()
    llm.fault = Fault.SERVER_ERROR
    log(f"outage: every model answers 503; B and C post {args.reports} failure reports each")
    accepted: dict[str, float] = {}
    by_company: dict[str, list[str]] = {"b": [], "c": []}
    for n in range(args.reports):
        # One report per company at a time, the next once it failed: each capture meets the
        # outage itself (one posted while its company's slot is busy would be deferred).
        round_ids = []
        for label in by_company:
            posted = post_reports(apis[label], f"{label}-outage-{n}", 1)
            accepted.update(posted)
            by_company[label] += list(posted)
            round_ids += list(posted)
        poll(
            lambda ids=round_ids: all(
                o["status"] == "failed" for o in capture_outcomes(dict.fromkeys(ids, 0)).values()
            ),
            args.phase_timeout,
            0.5,
        )

    def settled():
        # A company's first capture fails (after the client's retries); its others find the
        # slot busy meanwhile and are deferred (queued, uncharged), and the per-minute retry
        # stops each company's batch at its first failure. Settled: nothing running and
        # every company has a failed capture.
        outcomes = capture_outcomes(accepted)
        statuses = _count(o["status"] for o in outcomes.values())
        failed_companies = {
            label
            for label, ids in by_company.items()
            if any(outcomes[r]["status"] == "failed" for r in ids)
        }
        log(f"outage: captures {statuses}")
        return "running" not in statuses and failed_companies == set(by_company)

    poll(settled, args.phase_timeout, 2.0)
    outcomes = capture_outcomes(accepted)
    failed_ids = [r for r, o in outcomes.items() if o["status"] == "failed"]
    waiting_ids = [r for r, o in outcomes.items() if o["status"] in ("queued", "running")]
    reasons = _count(
        reason.split(" failed after")[0]
        for reason in ExecutionCapture.objects.filter(report_id__in=failed_ids).values_list(
            "reason", flat=True
        )
    )
    llm.fault = None
    recovered_at = time.time()
    now = timezone.now()
    pending = failed_ids + waiting_ids
    ExecutionCapture.objects.filter(report_id__in=pending).update(next_attempt_at=now)
    Schedule.objects.filter(name=SCHEDULE_PREFIX + retry_schedule).update(next_run=now)
    connection.close()
    log(
        f"outage: the LLM answers again; {len(failed_ids)} failed and {len(waiting_ids)} "
        "deferred captures made due now"
    )

    def recovered():
        outcomes = capture_outcomes({r: recovered_at for r in pending})
        done = sum(1 for o in outcomes.values() if by_llm(o))
        log(f"outage: {done}/{len(pending)} failed or deferred captures captured by the LLM")
        return done == len(pending)

    poll(recovered, args.phase_timeout, 2.0)
    outcomes = capture_outcomes({r: recovered_at for r in pending})
    failed_done = [r for r in failed_ids if by_llm(outcomes[r])]
    return {
        "reports": len(accepted),
        "failed_during_outage": len(failed_ids),
        "deferred_during_outage": len(waiting_ids),
        "failure_reasons": reasons,
        "clock_advanced": (
            "after the LLM recovered, the failed and deferred captures' next_attempt_at and "
            f"the {retry_schedule} schedule's next_run were set to now instead of waiting out "
            "the back-off (1 min) and the schedule's minute"
        ),
        "failed_captured_llm_after_recovery": len(failed_done),
        "failed_recovered_share": (
            round(len(failed_done) / len(failed_ids), 4) if failed_ids else None
        ),
        "all_captured_llm_after_recovery": sum(1 for o in outcomes.values() if by_llm(o)),
        "from_recovery_to_captured_s": percentiles(
            [o["to_captured_s"] for o in outcomes.values() if by_llm(o)]
        ),
        "final_statuses": _count(f"{o['status']}/{o['method'] or '-'}" for o in outcomes.values()),
    }


def by_llm(outcome: dict) -> bool:
    return (outcome["status"], outcome["method"]) == ("captured", "llm")


def _count(values) -> dict:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reports", type=int, default=6, help="failure reports per company")
    parser.add_argument("--webhooks", type=int, default=15, help="approvals per company (B, C)")
    parser.add_argument("--webhook-spacing", type=float, default=1.0, help="s between rounds")
    parser.add_argument("--phase-timeout", type=float, default=150.0)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "llm_faults.json"))
    args = parser.parse_args()
    started = time.monotonic()
    serve = None
    serve_log = open(WORK / "serve.log", "w")  # noqa: SIM115 (closed in finally)
    try:
        with (
            LLMProviderStandIn(PROFILE, answer=model_answer) as llm,
            WebhookReceiver() as receiver,
        ):
            env = dict(
                os.environ,
                SYNTHORG_LLM_BASE_URL=llm.base_url,
                SYNTHORG_LLM_API_KEY="sk-stand-in",
                SYNTHORG_LLM_TIMEOUT=str(LLM_TIMEOUT_S),
                SYNTHORG_LLM_TOTAL_TIMEOUT=str(LLM_TOTAL_TIMEOUT_S),
                SYNTHORG_OUTBOUND_ALLOW="127.0.0.1",
            )
            env.pop("SYNTHORG_LLM_MODEL", None)  # discovered, as a user configures it
            log(f"throw-away embedded server in {PGDATA}: migrating …")
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
                cwd=ROOT,
                env=env,
                check=True,
            )
            os.environ.update(SYNTHORG_OUTBOUND_ALLOW="127.0.0.1")  # webhook_configure's check
            django.setup()
            from django.conf import settings

            keys = seed(receiver.url)
            with free_port() as port:
                pass
            serve = subprocess.Popen(
                [sys.executable, "manage.py", "serve", "--port", str(port)],
                cwd=ROOT,
                env=env,
                stdout=serve_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            if not poll(lambda: serve.poll() is None and healthz(port) == 200, 300, 0.5):
                raise SystemExit(f"serve did not become healthy; see {WORK / 'serve.log'}")
            log(f"serving on {port}; stand-in LLM on {llm.base_url}; webhooks to {receiver.url}")
            apis = {label: Api(port, key) for label, key in keys.items()}
            hang = hang_phase(llm, apis, receiver, args)
            outage = outage_phase(llm, apis, args)
            q = settings.Q_CLUSTER
            out = {
                "command": " ".join(["bench/llm_faults.py", *sys.argv[1:]]),
                "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "wall_s": round(time.monotonic() - started, 1),
                "machine": {
                    "cpu_count": os.cpu_count(),
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                    "python": platform.python_version(),
                },
                "config": {
                    "database": "throw-away embedded PostgreSQL (SYNTHORG_PGDATA)",
                    "server": "manage.py serve (web, default cluster, LLM cluster)",
                    "default_cluster_workers": q["workers"],
                    "llm_cluster_workers": q["ALT_CLUSTERS"]["llm"]["workers"],
                    "llm_company_concurrency": settings.SYNTHORG_LLM_COMPANY_CONCURRENCY,
                    "llm_timeout_s": LLM_TIMEOUT_S,
                    "llm_total_timeout_s": LLM_TOTAL_TIMEOUT_S,
                    "llm_request_budget_s": settings.SYNTHORG_LLM["REQUEST_BUDGET"],
                    "stand_in": f"openai profile serving {list(PROFILE.models)}",
                    "reports_per_company": args.reports,
                    "approvals_per_company": args.webhooks,
                },
                "hang": {"hanging_model": HANGING_MODEL, "company_a_model": HANGING_MODEL} | hang,
                "outage": outage,
            }
            ask = hang["search_and_ask_a"]
            budget = settings.SYNTHORG_LLM["REQUEST_BUDGET"]
            # The budget bounds the request's LLM calls; the rest is retrieval and HTTP.
            ask["budget_s"] = budget
            ask["beyond_budget_s"] = round(ask["latency_s"] - budget, 3)
            Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
            log(json.dumps({"hang": hang, "outage": outage}))
            log(f"wrote {args.out}")
    finally:
        stop_serve(serve, log=serve_log, pgdata=PGDATA, work=WORK)


if __name__ == "__main__":
    main()
