"""The trigger-maintained BM25 scope totals always equal a scan of the live rows."""

import pytest
from django.db import connection
from django.utils import timezone

from memory.core.models.memory import Memory
from tests.memory.factories import MemoryFactory
from tests.persistence.factories import AgentFactory

pytestmark = pytest.mark.django_db

SCAN = """
SELECT company_id, agent_id, is_shared, count(*), sum(doc_length)
  FROM memory_memory WHERE superseded_at IS NULL
 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
"""
STORED = """
SELECT company_id, agent_id, is_shared, n, sum_doc_length
  FROM memory_bm25_scope_stats WHERE n > 0 ORDER BY 1, 2, 3
"""


def totals(sql):
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [tuple(int(v) if not isinstance(v, bool) else v for v in row) for row in cursor]


def assert_consistent():
    assert totals(STORED) == totals(SCAN)


def test_totals_follow_every_kind_of_write():
    agent, other = AgentFactory(), AgentFactory()
    first = MemoryFactory(agent=agent, content="The billing service deploys on Fridays")
    MemoryFactory(agent=agent, content="Staging resets nightly at two")
    shared = MemoryFactory(agent=agent, content="Shared runbook for incidents", is_shared=True)
    MemoryFactory(agent=other, content="Another agent's private note")
    assert_consistent()
    assert totals(STORED)[0][3] == 2  # two private live rows for the first agent

    first.content = "The billing service deploys on Fridays and Mondays after review"
    first.save()  # doc_length changes through the search trigger
    assert_consistent()

    Memory.objects.filter(pk=shared.pk).update(is_shared=False)
    assert_consistent()

    Memory.objects.filter(pk=first.pk).update(superseded_at=timezone.now())
    assert_consistent()
    Memory.objects.filter(pk=first.pk).update(superseded_at=None)
    assert_consistent()

    Memory.objects.filter(agent=other).delete()
    assert_consistent()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM memory_memory WHERE agent_id = %s", [agent.pk])
    assert totals(STORED) == totals(SCAN) == []


def test_totals_follow_multi_row_statements_once_per_statement():
    """One bulk insert, update and delete over several groups (statement triggers)."""
    agent, other = AgentFactory(), AgentFactory()
    rows = [
        MemoryFactory.build(agent=a, content=f"note {i} about deploys", is_shared=i % 3 == 0)
        for i in range(30)
        for a in (agent, other)
    ]
    Memory.objects.bulk_create(rows)
    assert_consistent()
    assert sum(row[3] for row in totals(STORED)) == 60
    Memory.objects.filter(agent=agent, is_shared=False).update(superseded_at=timezone.now())
    assert_consistent()
    Memory.objects.filter(agent=agent).update(content="rewritten with more words than before")
    assert_consistent()
    Memory.objects.filter(agent=other, is_shared=True).delete()
    assert_consistent()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_bm25_scope_stats WHERE n < 0")
        assert cursor.fetchone()[0] == 0
