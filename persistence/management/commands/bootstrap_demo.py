import os
import secrets
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from persistence.models import Agent, AgentApiKey, Company
from persistence.selectors.identity import agent_for_api_key
from persistence.services.agents import agent_create, api_key_issue, api_key_revoke
from persistence.services.companies import company_create, membership_set

DEMO_COMPANY = "Demo Company"
DEMO_AGENT = "demo-agent"
DEMO_KEY_NAME = "make run"
DEMO_KEY_LIFETIME = timedelta(days=30)
# A stored key is reused while it has at least this long to live; then it is replaced.
DEMO_KEY_MIN_REMAINING = timedelta(days=1)


class Command(BaseCommand):
    help = (
        "Idempotently create a demo company, a superuser and a demo agent, and print the "
        "agent's API key as AGENT_API_KEY=<key>: the one stored in the key file while it is "
        "valid, else a new 30-day key (earlier demo keys are revoked)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--key-file",
            type=Path,
            default=Path(settings.BASE_DIR) / "var" / "demo-agent.key",
            help="Where the demo key is kept between runs (mode 0600).",
        )

    def handle(self, *args, key_file: Path, **options):
        username = os.environ.get("SYNTHORG_ADMIN_USER", "admin")
        password = os.environ.get("SYNTHORG_ADMIN_PASSWORD")
        with transaction.atomic():
            company = Company.objects.filter(slug="demo").first() or company_create(
                name=DEMO_COMPANY, slug="demo"
            )
            User = get_user_model()
            user = User.objects.filter(username=username).first()
            shown_password = None
            if user is None:
                shown_password = password or secrets.token_urlsafe(12)
                user = User.objects.create_superuser(username=username, password=shown_password)
            elif password:
                user.set_password(password)
                user.save(update_fields=["password"])
            membership_set(company=company, user=user, role="owner")
            agent = Agent.objects.filter(company=company, name=DEMO_AGENT).first() or agent_create(
                company=company,
                name=DEMO_AGENT,
                role="assistant",
                seniority="senior",
                memory_level="persistent",
            )
            raw_key, reused, expires_at = self._demo_key(agent, key_file)
        self.stdout.write(f"Company: {company.name} (slug {company.slug})")
        if shown_password and not password:
            self.stdout.write(f"Superuser: {username} / password {shown_password}")
        else:
            self.stdout.write(
                f"Superuser: {username} (password from SYNTHORG_ADMIN_PASSWORD or unchanged)"
            )
        self.stdout.write(f"Agent: {agent.name} (id {agent.pk})")
        state = "reused" if reused else "new"
        self.stdout.write(f"Agent key: {state}, expires {expires_at:%Y-%m-%d %H:%M} UTC")
        self.stdout.write(f"AGENT_API_KEY={raw_key}")

    @staticmethod
    def _demo_key(agent: Agent, key_file: Path) -> tuple[str, bool, object]:
        """The stored demo key while it is valid; else revoke the old ones, issue one, store it."""
        now = timezone.now()
        try:
            stored = key_file.read_text().strip()
        except OSError:
            stored = ""
        if stored:
            found = agent_for_api_key(stored)
            if (
                found.error is None
                and found.key.agent_id == agent.pk
                and found.key.expires_at is not None
                and found.key.expires_at - now >= DEMO_KEY_MIN_REMAINING
            ):
                return stored, True, found.key.expires_at
        for old in AgentApiKey.objects.filter(agent=agent, name=DEMO_KEY_NAME, revoked_at=None):
            api_key_revoke(key=old)
        issued = api_key_issue(agent=agent, name=DEMO_KEY_NAME, expires_at=now + DEMO_KEY_LIFETIME)
        key_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(issued.raw_key + "\n")
        return issued.raw_key, False, issued.key.expires_at
