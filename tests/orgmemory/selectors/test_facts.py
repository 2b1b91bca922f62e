"""Fact state: time travel from the log, history, isolation between companies."""

from datetime import timedelta

import pytest

from orgmemory.domain import OrgMemoryQuery
from orgmemory.selectors import (
    fact_history,
    fact_state,
    live_facts,
    org_prompt_context,
    policies,
    query_facts,
)
from orgmemory.services.facts import fact_publish, fact_retract
from synthorg.errors import NotFoundError

pytestmark = pytest.mark.django_db

TINY = timedelta(microseconds=1)


def _publish(company, human, content, category="procedure", **kwargs):
    return fact_publish(company=company, actor=human, content=content, category=category, **kwargs)


def test_as_of_before_between_and_after_retraction(company, human):
    v1 = _publish(company, human, "Use Flask for web services", category="adr")
    v2 = _publish(
        company, human, "Use Litestar for web services", category="adr", fact_id=v1.fact_id
    )
    gone = fact_retract(company=company, actor=human, fact_id=v1.fact_id)

    def live_at(moment):
        return [(f.version, f.content) for f in live_facts(company=company, as_of=moment)]

    assert live_at(v1.timestamp - TINY) == []
    assert live_at(v1.timestamp) == [(1, "Use Flask for web services")]
    assert live_at(v2.timestamp - TINY) == [(1, "Use Flask for web services")]
    assert live_at(v2.timestamp) == [(2, "Use Litestar for web services")]
    assert live_at(gone.timestamp - TINY) == [(2, "Use Litestar for web services")]
    assert live_at(gone.timestamp) == []
    assert live_at(None) == []

    with pytest.raises(NotFoundError) as caught:
        fact_state(company=company, fact_id=v1.fact_id, as_of=v1.timestamp - TINY)
    assert caught.value.code == "fact_not_found_at"
    between = fact_state(company=company, fact_id=v1.fact_id, as_of=v2.timestamp - TINY)
    assert (between.version, between.content, between.retracted_at) == (
        1,
        "Use Flask for web services",
        None,
    )
    after = fact_state(company=company, fact_id=v1.fact_id)
    assert (after.version, after.content, after.retracted_at) == (
        3,
        "Use Litestar for web services",
        gone.timestamp,
    )
    assert after.created_at == v1.timestamp

    def query_at(moment):
        query = OrgMemoryQuery(context="web services framework", as_of=moment)
        return [f.content for f in query_facts(company=company, query=query)]

    assert query_at(v1.timestamp - TINY) == []
    assert query_at(v2.timestamp - TINY) == ["Use Flask for web services"]
    assert query_at(gone.timestamp - TINY) == ["Use Litestar for web services"]
    assert query_at(gone.timestamp) == []


def test_history_lists_every_version(company, human, outsider):
    v1 = _publish(company, human, "one")
    _publish(company, human, "two", fact_id=v1.fact_id)
    fact_retract(company=company, actor=human, fact_id=v1.fact_id)
    rows = fact_history(company=company, fact_id=v1.fact_id)
    assert [(r.version, r.operation_type, r.content) for r in rows] == [
        (1, "PUBLISH", "one"),
        (2, "PUBLISH", "two"),
        (3, "RETRACT", None),
    ]
    with pytest.raises(NotFoundError):
        fact_history(company=outsider.company, fact_id=v1.fact_id)


def test_reads_are_isolated_between_companies(company, human, outsider):
    from persistence.principal import Principal
    from tests.persistence.factories import MembershipFactory

    membership = MembershipFactory(company=outsider.company, user__password=None)
    theirs = Principal.for_human(
        membership.user, outsider.company, "admin"
    )  # core policies need admin
    _publish(outsider.company, theirs, "Secret deploy procedure")
    _publish(outsider.company, theirs, "Their policy", category="core_policy")
    assert query_facts(company=company, query=OrgMemoryQuery(context="deploy")) == []
    assert live_facts(company=company) == []
    assert policies(company=company) == []
    assert org_prompt_context(company=company, context="deploy").facts == []
