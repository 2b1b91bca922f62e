from pathlib import Path

import yaml
from django.core.management.base import BaseCommand, CommandError

from persistence.models import Company
from persistence.services.companies import company_config_set, company_create
from synthorg.errors import DomainError


class Command(BaseCommand):
    help = "Validate a company config YAML file (memory:/org_memory:) and store it."

    def add_arguments(self, parser):
        parser.add_argument("company", help="Company slug or name.")
        parser.add_argument("file", type=Path, help="YAML file with memory:/org_memory: sections.")
        parser.add_argument("--create", action="store_true", help="Create the company if missing.")

    def handle(self, *args, company, file, create, **options):
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise CommandError(f"{file} is not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise CommandError(f"{file} must contain a YAML mapping at the top level.")
        ignored = sorted(k for k in data if k not in ("memory", "org_memory"))
        if ignored:
            self.stdout.write(
                f"ignoring sections other than memory/org_memory: {', '.join(ignored)}"
            )
        data = {k: data[k] for k in ("memory", "org_memory") if k in data}
        target = (
            Company.objects.filter(slug=company).first()
            or Company.objects.filter(name=company).first()
        )
        try:
            if target is None:
                if not create:
                    raise CommandError(f"no company {company!r} (use --create to create it)")
                target = company_create(name=company, config=data)
                self.stdout.write(self.style.SUCCESS(f"Created company {target.slug!r}."))
            else:
                company_config_set(company=target, data=data)
        except DomainError as exc:
            lines = [f"  {e['field']}: {e['message']}" for e in exc.errors]
            raise CommandError("\n".join([f"invalid config in {file}:", *lines])) from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"Loaded {file} into {target.slug!r} (revision {target.config_revision})."
            )
        )
