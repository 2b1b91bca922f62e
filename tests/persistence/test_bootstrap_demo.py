"""``manage.py bootstrap_demo`` (run by every ``make run``): idempotent, one live demo key."""

import io
import os
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_q.models import Schedule

from persistence.models import Agent, AgentApiKey, AuditEntry, Company
from persistence.selectors.identity import agent_for_api_key

pytestmark = pytest.mark.django_db


def run(key_file) -> dict:
    out = io.StringIO()
    call_command("bootstrap_demo", key_file=key_file, stdout=out)
    lines = out.getvalue().splitlines()
    return {
        "key": next(line.split("=", 1)[1] for line in lines if line.startswith("AGENT_API_KEY=")),
        "state": next(line for line in lines if line.startswith("Agent key:")),
    }


def test_first_run_creates_the_demo_company_with_its_schedule_and_a_30_day_key(tmp_path):
    key_file = tmp_path / "demo.key"
    first = run(key_file)
    company = Company.objects.get(slug="demo")
    assert Schedule.objects.filter(
        name=f"synthorg:memory-maintenance:company-{company.pk}"
    ).exists()
    key = agent_for_api_key(first["key"]).key
    assert key.agent.name == "demo-agent"
    assert key.name == "make run"
    assert timedelta(days=29) < key.expires_at - timezone.now() <= timedelta(days=30)
    assert first["state"].startswith("Agent key: new, expires ")
    assert key_file.read_text().strip() == first["key"]
    assert os.stat(key_file).st_mode & 0o777 == 0o600


def test_later_runs_reuse_the_stored_key_instead_of_minting_more(tmp_path):
    key_file = tmp_path / "demo.key"
    first = run(key_file)
    for _ in range(3):
        again = run(key_file)
        assert again["key"] == first["key"]
        assert again["state"].startswith("Agent key: reused, expires ")
    agent = Agent.objects.get(name="demo-agent")
    assert AgentApiKey.objects.filter(agent=agent).count() == 1
    assert AuditEntry.objects.filter(action_type="api_key.issued").count() == 1
    assert Company.objects.filter(slug="demo").count() == 1
    assert Schedule.objects.filter(name__startswith="synthorg:memory-maintenance:").count() == 1


@pytest.mark.parametrize(
    "spoil",
    ["revoked", "nearly_expired", "file_lost", "other_agents_key"],
)
def test_an_unusable_stored_key_is_replaced_and_the_old_demo_keys_revoked(tmp_path, spoil):
    key_file = tmp_path / "demo.key"
    first = run(key_file)
    old = agent_for_api_key(first["key"]).key
    if spoil == "revoked":
        AgentApiKey.objects.filter(pk=old.pk).update(revoked_at=timezone.now())
    elif spoil == "nearly_expired":
        AgentApiKey.objects.filter(pk=old.pk).update(expires_at=timezone.now() + timedelta(hours=2))
    elif spoil == "file_lost":
        key_file.unlink()
    else:
        from persistence.services.agents import api_key_issue
        from tests.persistence.factories import AgentFactory

        key_file.write_text(api_key_issue(agent=AgentFactory()).raw_key)
    second = run(key_file)
    assert second["key"] != first["key"]
    assert second["state"].startswith("Agent key: new")
    assert key_file.read_text().strip() == second["key"]
    agent = Agent.objects.get(name="demo-agent")
    live = [k for k in AgentApiKey.objects.filter(agent=agent) if k.is_usable()]
    assert [k.pk for k in live] == [agent_for_api_key(second["key"]).key.pk]
    assert AgentApiKey.objects.get(pk=old.pk).revoked_at is not None
