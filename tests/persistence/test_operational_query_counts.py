"""List endpoints run a constant number of queries, however many rows the page holds."""

import pytest
from django.utils import timezone

from persistence.models import AuditEntry, Heartbeat
from tests.persistence.factories import (
    ArtifactFactory,
    CostRecordFactory,
    MessageFactory,
    ParkedContextFactory,
    ProjectFactory,
    TaskFactory,
)

pytestmark = pytest.mark.django_db

# Agent auth: one key lookup (agent + company joined); the last-used stamp is written at most
# once per resolution window, so each test makes one warm-up request first. Then the page:
# cursor pages need no COUNT; page-number pages (small tables) add one.
AGENT_AUTH_QUERIES = 1


@pytest.fixture(autouse=True)
def _warm_key(caller):
    assert caller.client.get("/api/v1/me").status_code == 200


def _fill(company, agent, n):
    now = timezone.now()
    for _ in range(n):
        task = TaskFactory(company=company, assignee=agent)
        CostRecordFactory(company=company, agent=agent, task=task)
        MessageFactory(company=company, sender_agent=agent)
        AuditEntry.objects.create(
            company=company, actor_agent=agent, action_type="x", created_at=now
        )
        ParkedContextFactory(company=company, agent=agent, task=task)
        ArtifactFactory(company=company, created_by=agent, task=task)
        Heartbeat.objects.create(company=company, agent=agent, created_at=now)
        ProjectFactory(company=company, lead=agent)


@pytest.mark.parametrize(
    ("url", "page_queries"),
    [
        ("/api/v1/tasks", 1),
        ("/api/v1/tasks?status=created", 1),
        ("/api/v1/costs", 1),
        ("/api/v1/costs?agent={agent}", 1),
        ("/api/v1/messages?channel=general", 1),
        ("/api/v1/audit", 1),
        ("/api/v1/parked-contexts", 1),
        ("/api/v1/artifacts", 1),
        ("/api/v1/heartbeats", 1),
        ("/api/v1/projects", 2),
    ],
)
def test_list_query_count_is_constant(caller, django_assert_num_queries, url, page_queries):
    url = url.format(agent=caller.agent.pk)
    _fill(caller.company, caller.agent, 2)
    with django_assert_num_queries(AGENT_AUTH_QUERIES + page_queries):
        small = caller.client.get(url)
    _fill(caller.company, caller.agent, 6)
    with django_assert_num_queries(AGENT_AUTH_QUERIES + page_queries):
        large = caller.client.get(url)
    assert small.status_code == large.status_code == 200
    if "results" in large.json():
        assert len(large.json()["results"]) > len(small.json()["results"])


def test_next_page_costs_the_same(caller, django_assert_num_queries):
    _fill(caller.company, caller.agent, 6)
    first = caller.client.get("/api/v1/costs", {"page_size": 2}).json()
    with django_assert_num_queries(AGENT_AUTH_QUERIES + 1):
        second = caller.client.get(first["next"])
    assert len(second.json()["results"]) == 2
