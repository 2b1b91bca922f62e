import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from persistence.models import Agent, Company
from persistence.services.portability import content_export


def find_company(value: str) -> Company:
    company = (
        Company.objects.filter(slug=value).first() or Company.objects.filter(name=value).first()
    )
    if company is None and value.isdigit():
        company = Company.objects.filter(pk=int(value)).first()
    if company is None:
        raise CommandError(f"no company {value!r}")
    return company


def find_agent(company: Company, value: str) -> Agent:
    agent = Agent.objects.filter(company=company, name=value).first()
    if agent is None and value.isdigit():
        agent = Agent.objects.filter(company=company, pk=int(value)).first()
    if agent is None:
        raise CommandError(f"no agent {value!r} in {company.slug!r}")
    return agent


class Command(BaseCommand):
    help = (
        "Export a company's (or one agent's) memories, shared knowledge, archive and every "
        "other registered kind of agent content as JSON Lines."
    )

    def add_arguments(self, parser):
        parser.add_argument("company", help="Company slug, name or id.")
        parser.add_argument("--agent", help="Only this agent (name or id).")
        parser.add_argument("--out", type=Path, help="Write here instead of stdout.")

    def handle(self, *args, company, agent, out, **options):
        target = find_company(company)
        only = find_agent(target, agent) if agent else None
        lines = content_export(company=target, agent=only, via="export_memories")
        stream = out.open("w", encoding="utf-8") if out else sys.stdout
        counts: dict[str, int] = {}
        try:
            for line in lines:
                stream.write(line)
                kind = json.loads(line)["type"]
                counts[kind] = counts.get(kind, 0) + 1
                if sum(counts.values()) % 5000 == 0:
                    self.stderr.write(f"  {sum(counts.values())} lines…")
        finally:
            if out:
                stream.close()
        counts.pop("synthorg_export", None)
        summary = ", ".join(f"{k} {v}" for k, v in counts.items()) or "no rows"
        self.stderr.write(f"exported {target.slug}{f'/{only.name}' if only else ''}: {summary}")
