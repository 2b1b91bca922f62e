"""django-q2's admin is for superusers only (issue 22, finding 2): a Schedule names any
function for the worker to run, and the task lists hold every company's arguments."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django_q.models import Schedule

from tests.persistence.factories import MembershipFactory

pytestmark = pytest.mark.django_db

PAGES = ["schedule", "success", "failure", "ormq"]


@pytest.fixture
def staff_with_every_q_permission(company):
    membership = MembershipFactory(
        company=company, role="owner", user__password=None, user__is_staff=True
    )
    membership.user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="django_q")
    )
    client = Client()
    client.force_login(membership.user)
    return client


@pytest.mark.parametrize("model", PAGES)
def test_a_non_superuser_cannot_list_or_add(staff_with_every_q_permission, model):
    client = staff_with_every_q_permission
    assert client.get(f"/admin/django_q/{model}/").status_code == 403
    assert client.get(f"/admin/django_q/{model}/add/").status_code == 403


def test_a_non_superuser_cannot_add_or_change_a_schedule(staff_with_every_q_permission):
    client = staff_with_every_q_permission
    form = {
        "name": "pwn",
        "func": "os.system",
        "args": "'id'",
        "schedule_type": "O",
        "repeats": "-1",
        "next_run_0": "2030-01-01",
        "next_run_1": "00:00:00",
    }
    assert client.post("/admin/django_q/schedule/add/", form).status_code == 403
    assert not Schedule.objects.filter(name="pwn").exists()
    existing = Schedule.objects.create(name="kept", func="math.floor", args="1.5")
    change_url = f"/admin/django_q/schedule/{existing.pk}/change/"
    assert client.get(change_url).status_code == 403
    assert client.post(change_url, {**form, "name": "kept"}).status_code == 403
    existing.refresh_from_db()
    assert existing.func == "math.floor"
    assert b"django_q" not in client.get("/admin/").content  # not offered on the index


def test_a_superuser_still_manages_schedules(company):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_superuser("root", "root@example.com", None)
    client = Client()
    client.force_login(user)
    for model in PAGES:
        assert client.get(f"/admin/django_q/{model}/").status_code == 200
    assert client.get("/admin/django_q/schedule/add/").status_code == 200
