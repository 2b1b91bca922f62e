"""A new company gets its maintenance schedule in the transaction that creates it."""

import pytest
from django.db import transaction
from django_q.models import Schedule

from persistence.models import Company
from persistence.services.companies import company_create
from synthorg.errors import ConflictError, InvalidInputError

pytestmark = pytest.mark.django_db


def maintenance_rows():
    return list(
        Schedule.objects.filter(name__startswith="synthorg:memory-maintenance:")
        .order_by("name")
        .values_list("name", "func", "schedule_type", "kwargs", "repeats")
    )


def test_company_create_schedules_maintenance_with_the_company(django_capture_on_commit_callbacks):
    # No commit callback is needed: the row is written in the creating transaction.
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        company = company_create(name="Acme")
    assert callbacks == []
    assert maintenance_rows() == [
        (
            f"synthorg:memory-maintenance:company-{company.pk}",
            "memory.core.tasks.run_company_maintenance",
            Schedule.DAILY,
            repr({"company_id": company.pk}),
            -1,
        )
    ]


def test_the_configured_interval_is_used_and_never_means_no_schedule():
    hourly = company_create(
        name="Hourly", config={"memory": {"consolidation": {"interval": "hourly"}}}
    )
    company_create(name="Never", config={"memory": {"consolidation": {"interval": "never"}}})
    assert [(name, kind) for name, _f, kind, _k, _r in maintenance_rows()] == [
        (f"synthorg:memory-maintenance:company-{hourly.pk}", Schedule.HOURLY)
    ]


def test_a_refused_company_leaves_no_schedule():
    company_create(name="Taken", slug="taken")
    before = maintenance_rows()
    with pytest.raises(ConflictError), transaction.atomic():
        company_create(name="Other", slug="taken")
    with pytest.raises(InvalidInputError), transaction.atomic():
        company_create(name="Bad", config={"memory": {"consolidation": {"interval": "often"}}})
    assert maintenance_rows() == before
    assert Company.objects.count() == 1


def test_creating_a_company_leaves_other_companies_schedules_alone():
    first = company_create(name="First")
    Schedule.objects.filter(name=f"synthorg:memory-maintenance:company-{first.pk}").update(
        schedule_type=Schedule.WEEKLY
    )
    second = company_create(name="Second")
    kinds = {name: kind for name, _f, kind, _k, _r in maintenance_rows()}
    assert kinds == {
        f"synthorg:memory-maintenance:company-{first.pk}": Schedule.WEEKLY,
        f"synthorg:memory-maintenance:company-{second.pk}": Schedule.DAILY,
    }
