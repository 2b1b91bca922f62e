"""Ranking of the current facts in SQL (GIN index + maintained totals) against the
time-travel path, which ranks the live set it reads per query (the previous algorithm)."""

import pytest
from django.db import connection
from django.utils import timezone

from orgmemory.domain import OrgMemoryQuery
from orgmemory.models import OperationLogEntry, OrgFact
from orgmemory.selectors import query_facts
from orgmemory.services.facts import fact_publish, fact_retract
from persistence.principal import Principal
from tests.persistence.factories import CompanyFactory, MembershipFactory

pytestmark = pytest.mark.django_db

TEXTS = [
    ("procedure", "Deploy with the release train; deploy twice a week"),
    ("procedure", "Rollback a failed deploy with the rollback script"),
    ("convention", "Lunch is served at noon on Fridays"),
    ("convention", "Code review needs two approvals before a deploy"),
    ("adr", "We chose Postgres for the billing database"),
    ("adr", "The billing service keeps invoices for seven years"),
    ("convention", "A release train is the weekly bundle of merged changes"),
    ("procedure", "Restore the database from the nightly backup"),
    ("core_policy", "Never deploy on Fridays"),
]
CONTEXTS = [
    "how do I deploy a release?",
    "billing database invoices",
    "lunch on Fridays",
    "rollback the backup restore",
    "nothing matches zzz",
]


def _publish(company, actor, content, category="procedure", **kwargs):
    return fact_publish(company=company, actor=actor, content=content, category=category, **kwargs)


def _seed(company, human):
    facts = [_publish(company, human, content, category) for category, content in TEXTS]
    # a second version, a retraction: the ranking must only see each live fact's current text
    _publish(company, human, "Deploy only with the release train", fact_id=facts[0].fact_id)
    fact_retract(company=company, actor=human, fact_id=facts[2].fact_id)
    return facts


def _ranked(company, context, **fields):
    found = query_facts(company=company, query=OrgMemoryQuery(context=context, **fields))
    return [(view.fact_id, view.version, view.score) for view in found]


def _totals(company_id):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT category, n, sum_doc_length FROM orgmemory_fact_bm25_stats "
            "WHERE company_id = %s AND n > 0 ORDER BY category",
            [company_id],
        )
        return cursor.fetchall()


def _expected_totals(company_id):
    live = OrgFact.objects.filter(company_id=company_id, retracted_at__isnull=True)
    out: dict[str, list[int]] = {}
    for fact in live:
        current = OperationLogEntry.objects.get(fact_id=fact.fact_id, version=fact.version)
        row = out.setdefault(fact.category, [0, 0])
        row[0] += 1
        row[1] += current.doc_length
    return [(category, n, total) for category, (n, total) in sorted(out.items())]


def test_current_ranking_equals_the_ranking_of_the_live_set_now(company, human):
    _seed(company, human)
    now = timezone.now()
    for context in CONTEXTS:
        current = _ranked(company, context)
        assert current == _ranked(company, context, as_of=now), context
    deploy = _ranked(company, "how do I deploy a release?")
    assert deploy and deploy[0][2] == 1.0 and deploy[0][1] == 2  # the second version ranks
    assert _ranked(company, "nothing matches zzz") == []
    # core_policy facts are never ranked (policies() returns them), retracted ones are gone
    assert _ranked(company, "lunch on Fridays") == []


def test_current_ranking_with_embeddings_equals_the_live_set_ranking(
    company, human, with_embeddings
):
    _seed(company, human)
    now = timezone.now()
    for context in CONTEXTS[:3]:
        assert _ranked(company, context) == _ranked(company, context, as_of=now), context


def test_search_fields_and_totals_follow_publish_update_retract(company, human):
    assert _totals(company.pk) == []
    facts = _seed(company, human)
    assert _totals(company.pk) == _expected_totals(company.pk)
    for fact in OrgFact.objects.filter(company=company):
        current = OperationLogEntry.objects.get(fact_id=fact.fact_id, version=fact.version)
        if current.operation_type == OperationLogEntry.Operation.PUBLISH:
            assert (fact.doc_length, fact.search_vector) == (
                current.doc_length,
                current.search_vector,
            )
    fact_retract(company=company, actor=human, fact_id=facts[1].fact_id)
    _publish(company, human, "Deploy with the release train, reviewed", fact_id=facts[0].fact_id)
    assert _totals(company.pk) == _expected_totals(company.pk)
    procedures = dict((c, n) for c, n, _total in _totals(company.pk))["procedure"]
    assert procedures == 2  # facts[0] (v3) and the restore procedure


def test_another_company_changes_neither_results_nor_scores(company, human):
    _seed(company, human)
    before = {context: _ranked(company, context) for context in CONTEXTS}
    other = CompanyFactory()
    membership = MembershipFactory(company=other, role="admin", user__password=None)
    stranger = Principal.for_human(membership.user, other, membership.role)
    for _ in range(3):
        for category, content in TEXTS:
            _publish(other, stranger, content, category)
    assert {context: _ranked(company, context) for context in CONTEXTS} == before
    theirs = {f for f, _v, _s in _ranked(other, "how do I deploy a release?")}
    assert theirs and not theirs & {f for f, _v, _s in before["how do I deploy a release?"]}


def test_the_current_ranking_runs_as_prepared_statements(company, human):
    """The query's lexemes and the BM25 statement run on every context request: they are
    prepared statements of the connection, parsed once, however many contexts ask."""
    _seed(company, human)
    for context in CONTEXTS + CONTEXTS:
        _ranked(company, context)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT custom_plans + generic_plans FROM pg_prepared_statements "
            "WHERE statement LIKE %s OR statement LIKE %s ORDER BY statement",
            ["%orgmemory_fact_bm25_stats s%", "SELECT tsvector_to_array(to_tsvector(%"],
        )
        # ten contexts, each with a lexeme: ten runs of each statement, one statement each
        assert [row[0] for row in cursor.fetchall()] == [10, 10]
