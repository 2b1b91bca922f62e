"""Publishing and retracting: the log row, the snapshot and the audit entry move together."""

import uuid

import pytest

from orgmemory.models import OperationLogEntry, OrgFact
from orgmemory.services.facts import (
    ACTION_PUBLISHED,
    ACTION_RETRACTED,
    ACTION_WRITE_DENIED,
    FACT_RETRACTED,
    fact_publish,
    fact_retract,
)
from orgmemory.write_access import OrgMemoryAccessDeniedError
from persistence.models import AuditEntry
from synthorg.errors import ConflictError, InvalidInputError, NotFoundError

pytestmark = pytest.mark.django_db


def _principal(caller):
    from persistence.principal import Principal

    return Principal.for_agent(caller.agent)


def test_publish_creates_version_one_snapshot_and_audit(company, senior):
    entry = fact_publish(
        company=company,
        actor=_principal(senior),
        content="We use Litestar, not Flask.",
        category="adr",
        tags=["web", "framework"],
    )
    assert entry.version == 1
    assert entry.operation_type == "PUBLISH"
    assert (entry.author_is_human, entry.author_agent_id) == (False, senior.agent.pk)
    assert (entry.author_seniority, entry.author_autonomy_level) == ("senior", "semi")
    fact = OrgFact.objects.get(pk=entry.fact_id)
    assert (fact.content, fact.tags, fact.version) == (
        "We use Litestar, not Flask.",
        ["web", "framework"],
        1,
    )
    assert fact.created_at == fact.updated_at == entry.timestamp
    assert fact.retracted_at is None
    audit = AuditEntry.objects.get(action_type=ACTION_PUBLISHED)
    assert audit.actor_agent_id == senior.agent.pk
    assert audit.target_id == str(entry.fact_id)
    assert audit.details["version"] == 1


def test_revision_is_a_new_version_and_keeps_history(company, human):
    first = fact_publish(company=company, actor=human, content="v1 text", category="procedure")
    second = fact_publish(
        company=company,
        actor=human,
        content="v2 text",
        category="procedure",
        fact_id=first.fact_id,
        expected_version=1,
    )
    assert second.fact_id == first.fact_id
    assert second.version == 2
    assert second.timestamp > first.timestamp
    assert list(
        OperationLogEntry.objects.filter(fact_id=first.fact_id).values_list("version", "content")
    ) == [(1, "v1 text"), (2, "v2 text")]
    fact = OrgFact.objects.get(pk=first.fact_id)
    assert (fact.content, fact.version, fact.created_at) == ("v2 text", 2, first.timestamp)
    assert first.author_user_id == human.user.pk


def test_stale_expected_version_is_a_clean_409(company, human):
    first = fact_publish(company=company, actor=human, content="one", category="adr")
    fact_publish(company=company, actor=human, content="two", category="adr", fact_id=first.fact_id)
    with pytest.raises(ConflictError) as caught:
        fact_publish(
            company=company,
            actor=human,
            content="three",
            category="adr",
            fact_id=first.fact_id,
            expected_version=1,
        )
    assert caught.value.code == "fact_version_conflict"
    assert caught.value.extra == {"current_version": 2}
    assert OperationLogEntry.objects.filter(fact_id=first.fact_id).count() == 2
    assert OrgFact.objects.get(pk=first.fact_id).content == "two"


def test_category_is_immutable(company, human):
    first = fact_publish(company=company, actor=human, content="one", category="adr")
    with pytest.raises(InvalidInputError) as caught:
        fact_publish(
            company=company, actor=human, content="x", category="procedure", fact_id=first.fact_id
        )
    assert caught.value.code == "fact_category_immutable"


def test_denied_write_is_audited_and_writes_nothing(company, junior):
    with pytest.raises(OrgMemoryAccessDeniedError) as caught:
        fact_publish(company=company, actor=_principal(junior), content="x", category="adr")
    assert caught.value.extra == {
        "category": "adr",
        "rule": {"allowed_seniority": "senior", "human_allowed": True},
        "reason": "Category 'adr' needs seniority 'senior' or above; the author is 'junior'.",
        "can_request": True,
    }
    assert OperationLogEntry.objects.count() == 0
    assert OrgFact.objects.count() == 0
    audit = AuditEntry.objects.get(action_type__startswith="org_")
    assert (audit.action_type, audit.verdict, audit.actor_agent_id) == (
        ACTION_WRITE_DENIED,
        "denied",
        junior.agent.pk,
    )
    assert audit.details["category"] == "adr"


def test_invalid_payload_is_rejected(company, human):
    with pytest.raises(InvalidInputError) as caught:
        fact_publish(company=company, actor=human, content="   ", category="adr")
    assert caught.value.code == "invalid_fact"
    assert caught.value.errors[0]["field"] == "content"
    with pytest.raises(InvalidInputError):
        fact_publish(company=company, actor=human, content="x", category="gossip")
    assert OperationLogEntry.objects.count() == 0


def test_unknown_or_foreign_fact_is_404(company, human, outsider):
    with pytest.raises(NotFoundError):
        fact_publish(
            company=company, actor=human, content="x", category="adr", fact_id=uuid.uuid4()
        )
    theirs = fact_publish(
        company=outsider.company,
        actor=_human_of(outsider.company),
        content="their fact",
        category="adr",
    )
    with pytest.raises(NotFoundError):
        fact_publish(
            company=company, actor=human, content="x", category="adr", fact_id=theirs.fact_id
        )
    with pytest.raises(NotFoundError):
        fact_retract(company=company, actor=human, fact_id=theirs.fact_id)
    assert OrgFact.objects.get(pk=theirs.fact_id).version == 1


def _human_of(company):
    from persistence.principal import Principal
    from tests.persistence.factories import MembershipFactory

    membership = MembershipFactory(company=company, role="operator", user__password=None)
    return Principal.for_human(membership.user, company, membership.role)


def test_retract_appends_a_contentless_row(company, human):
    first = fact_publish(company=company, actor=human, content="old rule", category="convention")
    retraction = fact_retract(company=company, actor=human, fact_id=first.fact_id, reason="stale")
    assert (retraction.operation_type, retraction.version, retraction.content) == (
        "RETRACT",
        2,
        None,
    )
    fact = OrgFact.objects.get(pk=first.fact_id)
    assert fact.retracted_at == retraction.timestamp
    assert (fact.content, fact.version) == ("old rule", 2)
    audit = AuditEntry.objects.get(action_type=ACTION_RETRACTED)
    assert audit.details["reason"] == "stale"
    with pytest.raises(ConflictError, match=FACT_RETRACTED):
        fact_retract(company=company, actor=human, fact_id=first.fact_id)
    with pytest.raises(ConflictError) as caught:
        fact_publish(
            company=company,
            actor=human,
            content="new",
            category="convention",
            fact_id=first.fact_id,
        )
    assert caught.value.code == "fact_retracted"
    assert OperationLogEntry.objects.filter(fact_id=first.fact_id).count() == 2


def test_retract_follows_the_write_rule(company, human, junior):
    first = fact_publish(company=company, actor=human, content="keep", category="adr")
    with pytest.raises(OrgMemoryAccessDeniedError):
        fact_retract(company=company, actor=_principal(junior), fact_id=first.fact_id)
    assert OrgFact.objects.get(pk=first.fact_id).retracted_at is None
    assert AuditEntry.objects.filter(action_type=ACTION_WRITE_DENIED).count() == 1
