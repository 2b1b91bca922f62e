from django.core.management.base import BaseCommand, CommandError

from persistence.management.commands.export_memories import find_agent, find_company
from persistence.services.erasure import agent_erase


class Command(BaseCommand):
    help = (
        "Erase everything an agent stored (memories and their vectors, shared knowledge, "
        "archive, and every other registered kind), revoke its keys and deactivate it. "
        "One audited transaction."
    )

    def add_arguments(self, parser):
        parser.add_argument("company", help="Company slug, name or id.")
        parser.add_argument("agent", help="Agent name or id.")
        parser.add_argument("--reason", default="", help="Recorded in the audit entry.")
        parser.add_argument("--yes", action="store_true", help="Do not ask for confirmation.")

    def handle(self, *args, company, agent, reason, yes, **options):
        target = find_agent(find_company(company), agent)
        if not yes:
            answer = input(f"Erase all content of agent {target.name!r}? Type its name: ")
            if answer.strip() != target.name:
                raise CommandError("not confirmed; nothing erased")
        report = agent_erase(agent=target, reason=reason or "erase_agent command")
        for label, count in report.counts.items():
            self.stdout.write(f"{label}: {count} deleted")
        self.stdout.write(f"api keys revoked: {report.keys_revoked}; agent deactivated")
