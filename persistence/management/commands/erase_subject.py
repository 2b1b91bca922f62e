from django.core.management.base import BaseCommand, CommandError

from persistence.management.commands.export_memories import find_company
from persistence.services.erasure import subject_erase
from synthorg.errors import DomainError


class Command(BaseCommand):
    help = (
        "Erase everything a company holds about one end user (subject) across all its agents: "
        "memories with their chunks and revisions, shared knowledge, archived memories, "
        "conversations with their messages and extraction runs, request-log rows and the "
        "subject links of execution reports. One audited transaction; prints the receipt."
    )

    def add_arguments(self, parser):
        parser.add_argument("company", help="Company slug, name or id.")
        parser.add_argument("subject", help="The end user's id, exactly as stored.")
        parser.add_argument("--reason", default="", help="Recorded in the audit entry.")
        parser.add_argument("--yes", action="store_true", help="Do not ask for confirmation.")

    def handle(self, *args, company, subject, reason, yes, **options):
        target = find_company(company)
        if not yes:
            answer = input(f"Erase everything about subject {subject!r}? Type it again: ")
            if answer != subject:
                raise CommandError("not confirmed; nothing erased")
        try:
            receipt = subject_erase(
                company=target,
                subject=subject,
                reason=reason or "erase_subject command",
                via="command",
            )
        except DomainError as exc:
            raise CommandError(exc.detail) from exc
        for label, count in sorted(receipt.counts.items()):
            self.stdout.write(f"{label}: {count} deleted")
        if receipt.retained:
            self.stdout.write(
                "retained (append-only, no longer linked): " + ", ".join(receipt.retained)
            )
        self.stdout.write(
            f"{receipt.total} rows deleted; audit entry {receipt.audit_entry_id} "
            f"(subject digest {receipt.subject_digest})"
        )
