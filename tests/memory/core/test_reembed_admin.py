"""The re-embedding job from the admin: saving a company's config with another embedder
starts it, and its page shows progress to the staff of that company only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from memory.core.models.reembed import ReembedJob
from tests.memory.factories import MemoryFactory
from tests.persistence.factories import (
    AgentFactory,
    CompanyFactory,
    MembershipFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

URL = "/admin/memory/reembedjob/"


def staff_client(company):
    user = UserFactory(password=None, is_staff=True)
    MembershipFactory(company=company, user=user, role="admin")
    user.user_permissions.set(Permission.objects.all())
    client = Client()
    client.force_login(user)
    return client


def job(company, done, total, **fields):
    from django.utils import timezone

    now = timezone.now()
    return ReembedJob.objects.create(
        company=company, to_embedder_id=f"openai:{company.slug}", to_dims=1536,
        memories_total=total, memories_done=done, created_at=now, updated_at=now, **fields,
    )  # fmt: skip


def test_saving_another_embedder_in_the_admin_starts_a_job(
    admin_client, django_capture_on_commit_callbacks
):
    company = CompanyFactory(name="Initech", slug="initech")
    agent = AgentFactory(company=company)
    MemoryFactory(agent=agent, embedding=[0.1] * 384, embedder_id="old", embedding_status="ready")
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            f"/admin/persistence/company/{company.pk}/change/",
            {
                "name": "Initech",
                "slug": "initech",
                "config_yaml": "memory:\n  embedder:\n    model: wide\n    dims: 1536\n"
                "    base_url: http://127.0.0.1:9/v1\n",
                "memberships-TOTAL_FORMS": "0",
                "memberships-INITIAL_FORMS": "0",
            },
        )
    assert response.status_code == 302
    started = ReembedJob.objects.get(company=company)
    assert (started.status, started.to_embedder_id, started.to_dims) == (
        "running", "openai:wide", 1536,
    )  # fmt: skip
    assert (started.memories_total, started.from_embedder_id, started.started_via) == (
        1, "old", "config",
    )  # fmt: skip


def test_staff_see_their_companies_jobs_with_progress():
    mine, theirs = CompanyFactory(slug="mine"), CompanyFactory(slug="theirs")
    own = job(mine, 3, 8, reason="embedding request failed")
    other = job(theirs, 1, 2)
    client = staff_client(mine)
    page = client.get(URL).content.decode()
    assert f"{URL}{own.pk}/change/" in page and f"{URL}{other.pk}/change/" not in page
    assert '<progress max="1" value="0.375"></progress> 37.5% (3 / 8 rows)' in page
    assert "embedding request failed" in page
    detail = client.get(f"{URL}{own.pk}/change/")
    assert detail.status_code == 200 and "openai:mine" in detail.content.decode()
    assert client.get(f"{URL}{other.pk}/change/").status_code == 302  # "doesn't exist"
    # Read-only: no add, no delete.
    assert client.get(f"{URL}add/").status_code == 403
    client.post(f"{URL}{own.pk}/delete/", {"post": "yes"})
    assert ReembedJob.objects.filter(pk=own.pk).exists()


def test_resume_now_queues_only_running_jobs_of_own_company():
    from django_q.models import OrmQ

    mine, theirs = CompanyFactory(slug="mine"), CompanyFactory(slug="theirs")
    running = job(mine, 1, 4)
    other = job(theirs, 1, 4)
    client = staff_client(mine)
    before = OrmQ.objects.count()
    response = client.post(
        URL,
        {"action": "resume_now", "_selected_action": [running.pk, other.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert "1 job(s) queued." in response.content.decode()
    queued = [task.task for task in OrmQ.objects.all()[before:]]
    assert [t["func"] for t in queued] == ["memory.core.tasks.run_reembed_job"]
    assert [t["args"] for t in queued] == [(running.pk,)]


def test_the_resume_schedule_hands_each_company_with_a_due_job_its_task():
    """Every minute (durable jobs, issue 34: was every 5 minutes, one task per job)."""
    from django_q.models import OrmQ

    from memory.core.tasks import run_reembed_job
    from synthorg.jobs.dispatch import COMPANY_TASK
    from synthorg.jobs.registry import DISPATCH_TASK
    from synthorg.jobs.tasks import jobs_dispatch_kind
    from synthorg.schedules import declared_schedules

    spec = declared_schedules()["jobs-memory.reembed"]
    assert (spec.func, spec.args, spec.minutes, spec.cluster) == (
        DISPATCH_TASK,
        ("memory.reembed",),
        1,
        None,
    )
    running = job(CompanyFactory(slug="a"), 1, 4)
    ReembedJob.objects.filter(pk=running.pk).update(next_attempt_at=running.created_at)
    finished = job(
        CompanyFactory(slug="b"),
        4,
        4,
        status="completed",
        phase="done",
        completed_at=running.created_at,
    )
    before = OrmQ.objects.count()
    assert jobs_dispatch_kind("memory.reembed")["companies"] == [running.company_id]
    queued = [t.task for t in OrmQ.objects.all()[before:]]
    assert [(t["func"], t["args"]) for t in queued] == [
        (COMPANY_TASK, ("memory.reembed", running.company_id))
    ]
    assert [q.key for q in OrmQ.objects.all()[before:]] == ["synthorg"]  # the default cluster
    # The task of a job that is gone or finished does nothing.
    assert run_reembed_job(finished.pk) == "completed"
    assert run_reembed_job(10**9) is None
