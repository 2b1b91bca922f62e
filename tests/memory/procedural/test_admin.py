"""Admin: execution reports and lessons are read-only and company-scoped."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from memory.procedural.models import ExecutionCapture
from memory.procedural.tasks import capture_execution_report
from tests.memory.procedural.conftest import FAILED_REPORT
from tests.persistence.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db
REPORTS = "/admin/procedural/executionreport/"
LESSONS = "/admin/procedural/procedurallesson/"


@pytest.fixture
def staff(company):
    user = UserFactory(password=None, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["view_executionreport", "view_procedurallesson", "view_memory"]
        )
    )
    MembershipFactory(company=company, user=user, role="operator")
    client = Client()
    client.force_login(user)
    return client


def test_reports_and_lessons_are_scoped_and_read_only(staff, caller, outsider, llm_server):
    mine = caller.client.post("/api/v1/executions", FAILED_REPORT, format="json").json()["id"]
    theirs = outsider.client.post(
        "/api/v1/executions", {**FAILED_REPORT, "task_title": "Their secret task"}, format="json"
    ).json()["id"]
    capture_execution_report(mine)
    capture_execution_report(theirs)

    listing = staff.get(REPORTS).content.decode()
    assert "Deploy billing service" in listing and "Their secret task" not in listing
    assert staff.get(f"{REPORTS}{theirs}/change/").status_code == 302  # not visible → index
    detail = staff.get(f"{REPORTS}{mine}/change/")
    assert detail.status_code == 200
    page = detail.content.decode()
    assert "captured" in page and "helm upgrade timed out after 300s" in page
    assert staff.get(f"{REPORTS}add/").status_code == 403
    assert staff.post(f"{REPORTS}{mine}/delete/").status_code == 403

    filtered = staff.get(REPORTS, {"capture_status": "failed"}).content.decode()
    assert "Deploy billing service" not in filtered
    assert "Deploy billing service" in staff.get(REPORTS, {"outcome": "failed"}).content.decode()

    memory_id = ExecutionCapture.objects.get(report_id=mine).memory_id
    lessons = staff.get(LESSONS).content.decode()
    assert "helm-upgrade-timeouts" in lessons
    lesson_page = staff.get(f"{LESSONS}{memory_id}/change/").content.decode()
    assert "Run helm upgrade with --timeout 900s" in lesson_page
    assert f"/admin/procedural/executionreport/{mine}/change/" in lesson_page
