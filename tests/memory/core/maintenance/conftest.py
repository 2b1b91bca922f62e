"""Fixtures for memory-lifecycle tests: a company config setter and a memory seeder."""

from datetime import timedelta

import pytest
from django.utils import timezone

from persistence.services.companies import company_config_set
from tests.memory.factories import MemoryFactory


@pytest.fixture
def now():
    return timezone.now()


def configure(company, **consolidation):
    """Set ``memory.consolidation`` of ``company`` (the rest of the config at defaults)."""
    company_config_set(company=company, data={"memory": {"consolidation": consolidation}})


def seed(agent, count, *, now, age_days, category="episodic", template=None, **fields):
    """``count`` memories of ``agent`` created ``age_days`` (+ i minutes) before ``now``;
    ``template`` (with ``%(i)d``) gives each its content."""
    rows = []
    for i in range(count):
        created = now - timedelta(days=age_days, minutes=i)
        if template is not None:
            fields["content"] = template % {"i": i}
        rows.append(
            MemoryFactory(
                agent=agent,
                company=agent.company,
                category=category,
                created_at=created,
                updated_at=created,
                **fields,
            )
        )
    return rows
