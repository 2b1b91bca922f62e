"""``manage.py dream COMPANY [--agent NAME]``: run the deep dream now (the same service the
per-company q2 schedule calls), under one of the company's LLM slots like the scheduled
dream. When every slot is busy nothing runs: the command says so on stdout and exits 0
(busy slots are not an error; run it again later)."""

from django.core.management.base import BaseCommand, CommandError

from memory.ingestion.services.dream import dream_now
from persistence.models import Agent, Company
from synthorg.llm.slots import company_llm_concurrency

SLOTS_BUSY = (
    "{company}: skipped, nothing dreamed: every LLM slot of the company is busy "
    "(SYNTHORG_LLM_COMPANY_CONCURRENCY={limit}); run the command again later"
)


class Command(BaseCommand):
    help = "Consolidate agents' journals into their core summary memory (deep dream)."

    def add_arguments(self, parser):
        parser.add_argument("company", help="company slug or name")
        parser.add_argument("--agent", help="only this agent (name)")

    def handle(self, *args, **options):
        company = (
            Company.objects.filter(slug=options["company"]).first()
            or Company.objects.filter(name=options["company"]).first()
        )
        if company is None:
            raise CommandError(f"No company {options['company']!r}.")
        agent = None
        if options["agent"]:
            agent = Agent.objects.filter(company=company, name=options["agent"]).first()
            if agent is None:
                raise CommandError(f"No agent {options['agent']!r} in {company.name}.")
        runs = dream_now(company=company, agent=agent, trigger="manual")
        if runs is None:
            self.stdout.write(
                SLOTS_BUSY.format(company=company.slug, limit=company_llm_concurrency())
            )
            return
        for run in runs:
            line = f"{run.agent.name}: {run.status}"
            if run.core_memory_id:
                line += f" (core memory {run.core_memory_id})"
            if run.error:
                line += f" — {run.error}"
            self.stdout.write(line)
        self.stderr.write(f"{len(runs)} agent(s) dreamed")
