"""Admin: every operational model is listed; ledgers are read-only with no bulk actions."""

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model

from persistence.admin import LedgerAdmin
from persistence.models import (
    AgentRuntimeState,
    Artifact,
    AuditEntry,
    Checkpoint,
    CollaborationMetric,
    CostRecord,
    Heartbeat,
    LifecycleEvent,
    Message,
    ParkedContext,
    PersonalityPreset,
    Project,
    Setting,
    Task,
    TaskMetric,
)
from tests.persistence.factories import CostRecordFactory, TaskFactory

LEDGERS = [
    AuditEntry,
    CostRecord,
    Message,
    Heartbeat,
    LifecycleEvent,
    TaskMetric,
    CollaborationMetric,
]
MUTABLE = [
    Task,
    Project,
    Artifact,
    ParkedContext,
    Checkpoint,
    AgentRuntimeState,
    Setting,
    PersonalityPreset,
]


@pytest.fixture
def admin_client(client, db):
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-123456789")
    client.force_login(user)
    return client


def _url(model, view="changelist"):
    return f"/admin/persistence/{model._meta.model_name}/" + (
        "" if view == "changelist" else "add/"
    )


@pytest.mark.parametrize("model", LEDGERS + MUTABLE, ids=lambda m: m.__name__)
def test_every_model_has_a_filtered_dated_changelist(admin_client, model):
    model_admin = admin.site._registry[model]
    assert model_admin.list_filter
    assert model_admin.date_hierarchy
    assert admin_client.get(_url(model)).status_code == 200


@pytest.mark.parametrize("model", LEDGERS, ids=lambda m: m.__name__)
def test_ledgers_are_read_only(admin_client, model):
    model_admin = admin.site._registry[model]
    assert isinstance(model_admin, LedgerAdmin)
    assert model_admin.actions is None
    assert admin_client.get(_url(model, "add")).status_code == 403
    html = admin_client.get(_url(model)).content.decode()
    assert 'name="action"' not in html


@pytest.mark.django_db
def test_cost_record_change_page_is_view_only(admin_client, company):
    record = CostRecordFactory(company=company, task=TaskFactory(company=company))
    url = f"/admin/persistence/costrecord/{record.pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert admin_client.post(url, {"cost": "0"}).status_code == 403
    delete = admin_client.post(
        f"/admin/persistence/costrecord/{record.pk}/delete/", {"post": "yes"}
    )
    assert delete.status_code == 403
    assert CostRecord.objects.get(pk=record.pk).cost == record.cost


@pytest.mark.django_db
def test_budget_setting_is_validated_in_admin(admin_client, company):
    response = admin_client.post(
        "/admin/persistence/setting/add/",
        {
            "company": company.pk,
            "namespace": "budget",
            "key": "monthly_limit",
            "value": '{"amount": "-5"}',
        },
    )
    assert response.status_code == 200
    assert "value.amount" in response.content.decode()
    assert not Setting.objects.exists()
    ok = admin_client.post(
        "/admin/persistence/setting/add/",
        {
            "company": company.pk,
            "namespace": "budget",
            "key": "monthly_limit",
            "value": '{"amount": "50", "currency": "usd"}',
        },
    )
    assert ok.status_code == 302
    assert Setting.objects.get().value == {
        "amount": "50",
        "currency": "USD",
        "alert_threshold": "0.8",
    }
    assert AuditEntry.objects.filter(action_type="setting.changed").count() == 1
