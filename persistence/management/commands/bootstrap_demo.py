import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from persistence.models import Agent, Company
from persistence.services.agents import agent_create, api_key_issue
from persistence.services.companies import company_create, membership_set

DEMO_COMPANY = "Demo Company"
DEMO_AGENT = "demo-agent"


class Command(BaseCommand):
    help = (
        "Idempotently create a demo company, a superuser and a demo agent, and print a new "
        "API key for the agent as AGENT_API_KEY=<key>."
    )

    def handle(self, *args, **options):
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
            issued = api_key_issue(agent=agent, name="make run")
        self.stdout.write(f"Company: {company.name} (slug {company.slug})")
        if shown_password and not password:
            self.stdout.write(f"Superuser: {username} / password {shown_password}")
        else:
            self.stdout.write(
                f"Superuser: {username} (password from SYNTHORG_ADMIN_PASSWORD or unchanged)"
            )
        self.stdout.write(f"Agent: {agent.name} (id {agent.pk})")
        self.stdout.write(f"AGENT_API_KEY={issued.raw_key}")
