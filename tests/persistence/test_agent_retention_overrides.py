"""``Agent.retention_overrides`` through the agent services: blank is none, invalid is a 400."""

import pytest

from persistence.models import Agent
from persistence.services.agents import agent_create, agent_update
from synthorg.errors import InvalidInputError

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("blank", [None, "", {}])
def test_blank_overrides_are_stored_as_none(company, blank):
    agent = agent_create(company=company, name="a", retention_overrides=blank)
    assert Agent.objects.get(pk=agent.pk).retention_overrides == {}


def test_invalid_overrides_are_refused_and_nothing_is_written(company):
    with pytest.raises(InvalidInputError) as refused:
        agent_create(company=company, name="a", retention_overrides={"default_retention_days": 0})
    assert refused.value.code == "invalid_retention_overrides"
    assert refused.value.detail.startswith("retention_overrides: default_retention_days: ")
    assert not Agent.objects.filter(company=company, name="a").exists()
    agent = agent_create(company=company, name="b")
    with pytest.raises(InvalidInputError):
        agent_update(agent=agent, retention_overrides={"rules": [{"category": "nope"}]})
    assert Agent.objects.get(pk=agent.pk).retention_overrides == {}
    valid = {"default_retention_days": 30}
    assert agent_update(agent=agent, retention_overrides=valid).retention_overrides == valid
