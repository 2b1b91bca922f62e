"""``manage.py seed_demo``: a demo company whose learning half is visible at once.

Creates the "Demo Fleet" company (three agents with keys, core policies, memories, failed
execution reports of one recurring problem, a conversation), then runs what the background
workers would run — lesson capture, the skill evolver, conversation extraction, dream — so
the first approval item is in the console inbox when the server starts. Everything goes
through the same services as the API and the workers (one write path).

Without an LLM (``SYNTHORG_LLM_BASE_URL`` unset) every step takes its deterministic path:
rule-based lessons, a rule draft for the evolver, conversation turns remembered verbatim,
an extractive dream. With one, the same steps ask it — under ``make demo`` by default the
local stand-in model (``manage.py demo_llm``, :mod:`memory.interfaces.demo_llm`), which is
not a real model and says so. Idempotent: an existing demo company
is left as it is and only the instructions are printed again.
"""

from __future__ import annotations

import os
import secrets
import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from memory.core.domain import MemoryStoreRequest
from memory.core.services.store import memory_store_batch
from memory.ingestion.domain import MessageIn
from memory.ingestion.models import Conversation
from memory.ingestion.services.dream import agent_dream
from memory.ingestion.services.extraction import conversation_extract
from memory.ingestion.services.messages import conversation_messages_append
from memory.procedural.evolver.services import skill_evolver_run
from memory.procedural.services.capture import execution_report_capture
from memory.procedural.services.reports import execution_report_submit
from orgmemory.models import ApprovalItem
from persistence.models import Agent, Company
from persistence.services.agents import agent_create, api_key_issue
from persistence.services.companies import company_create, membership_set
from synthorg.health import llm_summary
from synthorg.llm.standin import DEMO_STANDIN_LABEL

SLUG = "demo-fleet"
NAME = "Demo Fleet"
OPERATOR = "operator"
CONFIG = {
    "memory": {
        # the evolver is off by default; the demo turns it on with the seeds' safety rail
        # (requires_human_approval is always true) and lets rule lessons (confidence 0.6) count
        "procedural": {"evolver": {"enabled": True, "min_confidence_for_org_promotion": 0.5}},
    },
    "org_memory": {
        "core_policies": [
            "Never deploy to production on Fridays after 15:00 UTC.",
            "Customer data never leaves the EU region.",
        ]
    },
}
AGENTS = (
    ("planner", "Plans releases and writes the runbooks."),
    ("deployer", "Runs deployments with helm and watches the rollout."),
    ("reviewer", "Reviews changes and signs off releases."),
)
MEMORIES = {
    "planner": [
        ("The billing service is released every Tuesday at 10:00 UTC.", "semantic"),
        ("Release notes go to #releases before every production deploy.", "procedural"),
    ],
    "deployer": [
        ("The production cluster is eks-prod-eu-1; staging is eks-staging-eu-1.", "semantic"),
    ],
    "reviewer": [
        ("Ana (SRE lead) must approve schema migrations on billing.", "social"),
    ],
}
FAILURE = {
    "task_type": "deploy",
    "task_title": "Deploy billing to production",
    # partial: the deploy got done, after a recovery the lesson should teach
    "outcome": "partial",
    "error": {"category": "timeout", "message": "helm upgrade timed out after 300s"},
    "tool_calls": [{"name": "helm_upgrade", "status": "failed"}],
    "retry_count": 2,
    "recovery": "Rolled back, then reran helm upgrade with --timeout 600s and --wait.",
}
CONVERSATION = [
    ("user", "Can you deploy billing v2.14 to staging today?"),
    ("assistant", "Yes: staging deploys run from the release branch; starting now."),
    ("user", "Remember that staging uses the eu-1 cluster and its own database."),
    ("assistant", "Noted: staging runs on eks-staging-eu-1 with a separate database."),
]


class Command(BaseCommand):
    help = "Create the Demo Fleet company and run its learning once (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--port",
            type=int,
            default=int(os.environ.get("PORT", "8000")),
            help="The port `serve` will use (only for the printed instructions).",
        )

    def handle(self, *args, port, **options):
        self.port = port
        started = time.monotonic()
        company = Company.objects.filter(slug=SLUG).first()
        if company is not None:
            self.stdout.write(f"{NAME} exists already; nothing seeded.")
            self._instructions(company, keys={}, password=None)
            return
        with transaction.atomic():  # all or nothing: a failed seed can simply be rerun
            company, keys, password = self._create()
            self._learn(company)
        self.stdout.write(
            self.style.SUCCESS(f"{NAME} seeded in {time.monotonic() - started:.1f} s.")
        )
        self._instructions(company, keys=keys, password=password)

    def _create(self):
        company = company_create(name=NAME, slug=SLUG, config=CONFIG)
        keys = {}
        for name, description in AGENTS:
            agent = agent_create(
                company=company,
                name=name,
                role=description,
                memory_level="persistent",
            )
            keys[name] = api_key_issue(agent=agent, name="demo").raw_key
            requests = [
                MemoryStoreRequest(content=text, category=category, source="demo")
                for text, category in MEMORIES.get(name, [])
            ]
            if requests:
                memory_store_batch(agent=agent, requests=requests)
        User = get_user_model()
        password = None
        operator = User.objects.filter(username=OPERATOR).first()
        if operator is None:
            password = secrets.token_urlsafe(12)
            operator = User.objects.create_user(username=OPERATOR, password=password)
        membership_set(company=company, user=operator, role="operator")
        for admin in User.objects.filter(is_superuser=True):
            membership_set(company=company, user=admin, role="owner")
        return company, keys, password

    def _learn(self, company: Company) -> None:
        """What the workers would do over the first days, run once, in order."""
        agents = list(Agent.objects.filter(company=company).order_by("pk"))
        for agent in agents:
            submitted = execution_report_submit(agent=agent, data=FAILURE, enqueue=False)
            capture = execution_report_capture(report_id=str(submitted.report.pk))
            self.stdout.write(f"  {agent.name}: failure report → lesson capture {capture.status}")
        run = skill_evolver_run(company=company, trigger="manual")
        self.stdout.write(
            f"  skill evolver: {run.status}, {run.proposals_emitted} proposal(s) for approval"
        )
        planner = agents[0]
        conversation_messages_append(
            agent=planner,
            conversation_id="onboarding",
            messages=[MessageIn(role=role, content=text) for role, text in CONVERSATION],
        )
        conversation = Conversation.objects.get(agent=planner, external_id="onboarding")
        extraction = conversation_extract(conversation=conversation, trigger="manual", force=True)
        if extraction is not None:
            self.stdout.write(
                f"  conversation → memories: {extraction.status}, {extraction.added} added"
            )
        dream = agent_dream(agent=planner, trigger="manual")
        self.stdout.write(f"  dream (journal → core summary): {dream.status}")

    def _instructions(self, company, *, keys, password) -> None:
        llm = llm_summary()
        pending = ApprovalItem.objects.filter(company=company, status="pending").count()
        if llm.get("standin"):
            mode = f"LLM: {llm['model']}, {DEMO_STANDIN_LABEL} (it answers with the rule paths)"
        elif llm["configured"]:
            mode = f"LLM: {llm['model'] or 'the first model the endpoint lists'}"
        else:
            mode = "LLM: none — deterministic learning (rule lessons, verbatim turns)"
        lines = [
            "",
            f"{NAME}: 3 agents, {pending} approval item(s) pending. {mode}",
            "  Console inbox (approve the skill):  /console/inbox/  "
            + (f"(user {OPERATOR}, password {password})" if password else f"(user {OPERATOR})"),
            "  What the agents remember:           /console/memories/",
        ]
        if keys:
            lines.append("  Agent keys (shown once):")
            lines += [f"    {name}: {key}" for name, key in keys.items()]
            lines.append(
                "  A lesson in the deployer's context:\n"
                "    curl -s -H 'Authorization: Bearer <deployer key>' -H 'Content-Type: "
                'application/json\' -d \'{"query": "deploy billing with helm", '
                f'"token_budget": 800}}\' http://127.0.0.1:{self.port}/api/v1/memories/context'
            )
        self.stdout.write("\n".join(lines))
