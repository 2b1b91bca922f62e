from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from persistence.management.commands.export_memories import find_company
from persistence.services.portability import content_import
from synthorg.errors import DomainError


class Command(BaseCommand):
    help = (
        "Import a JSON Lines export into a company (idempotent: rows already present are "
        "skipped; ids taken elsewhere are remapped; vectors re-computed if the embedder differs)."
    )

    def add_arguments(self, parser):
        parser.add_argument("company", help="Target company slug, name or id.")
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--no-create-agents",
            action="store_true",
            help="Refuse rows of agents missing in the target company instead of creating them.",
        )

    def handle(self, *args, company, file, no_create_agents, **options):
        target = find_company(company)
        try:
            with file.open(encoding="utf-8") as lines:
                self.stderr.write(f"importing {file} into {target.slug}…")
                results = content_import(
                    company=target,
                    lines=lines,
                    create_agents=not no_create_agents,
                    via="import_memories",
                )
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc.strerror}") from exc
        except DomainError as exc:
            raise CommandError(exc.detail) from exc
        for kind, counts in results.items():
            figures = ", ".join(f"{k} {v}" for k, v in vars(counts).items())
            self.stdout.write(f"{kind}: {figures}")
