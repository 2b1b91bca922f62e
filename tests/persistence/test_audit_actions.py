"""One closed set of audit actions (issue 34): ``audit_record`` accepts only an
:class:`AuditAction`; every dynamic action the product writes is a member."""

import pytest

from memory.finetune.models import FineTuneRun
from persistence.audit_actions import AuditAction
from persistence.models import AuditEntry
from persistence.services.audit import audit_record
from synthorg.jobs.registry import job_kinds
from tests.persistence.factories import CompanyFactory


@pytest.mark.django_db
def test_an_unknown_action_is_refused_before_anything_is_written():
    company = CompanyFactory()
    with pytest.raises(ValueError, match=r"memory\.teleported"):
        audit_record(company=company, action_type="memory.teleported")
    assert not AuditEntry.objects.filter(company=company).exists()
    entry = audit_record(company=company, action_type="memory.stored")  # a member's value
    assert entry.action_type == AuditAction.MEMORY_STORED == "memory.stored"


def test_every_re_queueable_job_kind_has_its_requeued_action():
    targets = {kind.target_type or kind.name for kind in job_kinds() if kind.failed_statuses}
    assert targets  # the registry is filled in AppConfig.ready
    for target in targets:
        assert AuditAction.requeued(target).value == f"{target}.requeued"


@pytest.mark.parametrize("status", [FineTuneRun.Status.PROMOTED, FineTuneRun.Status.NOT_PROMOTED])
def test_a_fine_tune_outcome_is_an_action(status):
    assert AuditAction.fine_tune(status).value == f"memory.fine_tune.{status}"


def test_values_are_dotted_and_unique():
    values = [action.value for action in AuditAction]
    assert len(values) == len(set(values))
    assert all("." in value and value == value.lower() for value in values)


@pytest.mark.django_db
def test_an_entry_is_written_as_objects_create_would_write_it():
    company = CompanyFactory()
    entry = audit_record(
        company=company,
        action_type=AuditAction("memory.stored"),
        target_type="memory",
        target_id=7,
        details={"ids": ["a", "b"], "nested": {"n": 1}},
    )
    assert entry.pk is not None and not entry._state.adding and entry._state.db == "default"
    stored = AuditEntry.objects.get(pk=entry.pk)
    assert (stored.company_id, stored.actor_agent_id, stored.actor_user_id) == (
        company.pk,
        None,
        None,
    )
    assert (stored.action_type, stored.target_type, stored.target_id) == (
        "memory.stored",
        "memory",
        "7",
    )
    assert (stored.verdict, stored.risk_level) == ("allowed", "low")
    assert stored.details == {"ids": ["a", "b"], "nested": {"n": 1}}
    assert stored.created_at == entry.created_at


@pytest.mark.django_db
def test_an_entry_of_an_unsaved_company_is_refused_as_save_refuses_it():
    with pytest.raises(ValueError, match="unsaved related object 'company'"):
        audit_record(company=CompanyFactory.build(), action_type=AuditAction("memory.stored"))
    assert not AuditEntry.objects.exists()


@pytest.mark.django_db
def test_an_entry_goes_through_save_when_its_model_has_a_post_save_receiver():
    from django.db.models.signals import post_save

    seen = []

    def receiver(sender, instance, created, **kwargs):
        seen.append((instance.action_type, created))

    post_save.connect(receiver, sender=AuditEntry)
    try:
        entry = audit_record(company=CompanyFactory(), action_type=AuditAction("memory.stored"))
    finally:
        post_save.disconnect(receiver, sender=AuditEntry)
    assert seen == [("memory.stored", True)]
    assert AuditEntry.objects.get(pk=entry.pk).action_type == "memory.stored"
