from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from persistence.models import Company
from persistence.services.companies import (
    company_config_from_yaml,
    company_config_set,
    company_create,
)
from synthorg.errors import DomainError


class Command(BaseCommand):
    help = "Validate a company config YAML file (memory:/org_memory:) and store it."

    def add_arguments(self, parser):
        parser.add_argument("company", help="Company slug or name.")
        parser.add_argument("file", type=Path, help="YAML file with memory:/org_memory: sections.")
        parser.add_argument("--create", action="store_true", help="Create the company if missing.")
        parser.add_argument(
            "--user",
            help=(
                "Username of the human loading it: org_memory.core_policies then become "
                "versioned core policies authored by this user (without it they are stored "
                "unversioned, and refused if they contradict versioned ones)."
            ),
        )

    def handle(self, *args, company, file, create, user=None, **options):
        actor_user = None
        if user:
            actor_user = get_user_model().objects.filter(username=user).first()
            if actor_user is None:
                raise CommandError(f"no user {user!r}")
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc.strerror}") from exc
        target = (
            Company.objects.filter(slug=company).first()
            or Company.objects.filter(name=company).first()
        )
        try:
            data, ignored = company_config_from_yaml(text, company_id=target.pk if target else None)
            if ignored:
                self.stdout.write(
                    f"ignoring sections other than memory/org_memory: {', '.join(ignored)}"
                )
            if target is None:
                if not create:
                    raise CommandError(f"no company {company!r} (use --create to create it)")
                with transaction.atomic():
                    target = company_create(name=company, config=data)
                    if actor_user is not None:  # its core policies become versioned facts
                        company_config_set(
                            company=target,
                            data=data,
                            actor_user=actor_user,
                            via="load_company_config",
                        )
                self.stdout.write(self.style.SUCCESS(f"Created company {target.slug!r}."))
            else:
                company_config_set(
                    company=target, data=data, actor_user=actor_user, via="load_company_config"
                )
        except DomainError as exc:
            lines = [
                f"  {e['field']}: {e['message']}" if e["field"] else f"  {e['message']}"
                for e in exc.errors
            ] or [f"  {exc.detail}"]
            raise CommandError("\n".join([f"invalid config in {file}:", *lines])) from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"Loaded {file} into {target.slug!r} (revision {target.config_revision})."
            )
        )
