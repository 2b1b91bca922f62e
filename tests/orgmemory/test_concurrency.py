"""Concurrent writers to one fact: distinct, gap-free versions or a clean 409 — never a
duplicate. Real threads, real transactions, each on its own database connection."""

import threading

import pytest
from django.db import connection

from orgmemory.models import OperationLogEntry, OrgFact
from orgmemory.services.facts import fact_publish
from synthorg.errors import ConflictError

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 2
ROUNDS = 5


def _race(company, human, fact_id, *, expected_version):
    barrier = threading.Barrier(WRITERS)
    outcomes: list = []

    def write(n: int) -> None:
        try:
            barrier.wait()
            entry = fact_publish(
                company=company,
                actor=human,
                content=f"writer {n}",
                category="adr",
                fact_id=fact_id,
                expected_version=expected_version,
            )
            outcomes.append(entry.version)
        except ConflictError as exc:
            outcomes.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_concurrent_revisions_get_distinct_gap_free_versions(
    company, human, allow_flush_of_append_only_tables
):
    first = fact_publish(company=company, actor=human, content="base", category="adr")
    for _ in range(ROUNDS):
        outcomes = _race(company, human, first.fact_id, expected_version=None)
        assert all(isinstance(v, int) for v in outcomes)
        assert len(set(outcomes)) == WRITERS
    versions = list(
        OperationLogEntry.objects.filter(fact_id=first.fact_id)
        .order_by("version")
        .values_list("version", flat=True)
    )
    assert versions == list(range(1, 1 + WRITERS * ROUNDS + 1))
    assert OrgFact.objects.get(pk=first.fact_id).version == versions[-1]


def test_concurrent_writers_of_the_same_version_one_wins_one_409(
    company, human, allow_flush_of_append_only_tables
):
    first = fact_publish(company=company, actor=human, content="base", category="adr")
    outcomes = _race(company, human, first.fact_id, expected_version=1)
    assert sorted(outcomes, key=str) == sorted([2, "fact_version_conflict"], key=str)
    fact = OrgFact.objects.get(pk=first.fact_id)
    winner = OperationLogEntry.objects.get(fact_id=first.fact_id, version=2)
    assert fact.version == 2
    assert fact.content == winner.content
    assert OperationLogEntry.objects.filter(fact_id=first.fact_id).count() == 2
