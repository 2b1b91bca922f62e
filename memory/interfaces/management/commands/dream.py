"""``manage.py dream COMPANY [--agent NAME]``: run the deep dream now (the same service the
per-company q2 schedule calls)."""

from django.core.management.base import BaseCommand, CommandError

from memory.ingestion.services.dream import agent_dream, company_dream
from persistence.models import Agent, Company


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
        if options["agent"]:
            agent = Agent.objects.filter(company=company, name=options["agent"]).first()
            if agent is None:
                raise CommandError(f"No agent {options['agent']!r} in {company.name}.")
            runs = [agent_dream(agent=agent, trigger="manual")]
        else:
            runs = company_dream(company=company, trigger="manual")
        for run in runs:
            line = f"{run.agent.name}: {run.status}"
            if run.core_memory_id:
                line += f" (core memory {run.core_memory_id})"
            if run.error:
                line += f" — {run.error}"
            self.stdout.write(line)
        self.stderr.write(f"{len(runs)} agent(s) dreamed")
