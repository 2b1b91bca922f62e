"""``manage.py export_journal COMPANY --out DIR [--agent NAME] [--since D] [--until D]``:
write each agent's journal as ``DIR/<agent>/<YYYY-MM-DD>.md`` files."""

from datetime import date
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory.ingestion.services.journal import journal_export
from persistence.models import Agent, Company


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{value!r} is not a date (YYYY-MM-DD).") from None


class Command(BaseCommand):
    help = "Export agents' daily journals as Markdown files."

    def add_arguments(self, parser):
        parser.add_argument("company", help="company slug or name")
        parser.add_argument("--out", required=True, help="directory to write into")
        parser.add_argument("--agent", help="only this agent (name)")
        parser.add_argument("--since", type=_day, help="first day (inclusive)")
        parser.add_argument("--until", type=_day, help="last day (inclusive)")

    def handle(self, *args, **options):
        company = (
            Company.objects.filter(slug=options["company"]).first()
            or Company.objects.filter(name=options["company"]).first()
        )
        if company is None:
            raise CommandError(f"No company {options['company']!r}.")
        agents = Agent.objects.filter(company=company).select_related("company")
        if options["agent"]:
            agents = agents.filter(name=options["agent"])
            if not agents.exists():
                raise CommandError(f"No agent {options['agent']!r} in {company.name}.")
        out = Path(options["out"])
        total = 0
        for agent in agents.order_by("name"):
            paths = journal_export(
                agent=agent, directory=out, since=options["since"], until=options["until"]
            )
            for path in paths:
                self.stdout.write(str(path))
            total += len(paths)
        self.stderr.write(f"{total} journal file(s) written under {out}")
