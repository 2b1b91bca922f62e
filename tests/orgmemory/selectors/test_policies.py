"""Core policies: config first, then core_policy facts."""

from datetime import timedelta

import pytest

from orgmemory.selectors import (
    policies,
)
from orgmemory.services.facts import fact_publish, fact_retract
from persistence.services.companies import company_config_set

pytestmark = pytest.mark.django_db

TINY = timedelta(microseconds=1)


def _publish(company, human, content, category="procedure", **kwargs):
    return fact_publish(company=company, actor=human, content=content, category=category, **kwargs)


def test_policies_config_first_then_core_policy_facts(company, human):
    company_config_set(
        company=company,
        data={"org_memory": {"core_policies": ["PRs require 2 approvals", "No commits to main"]}},
    )
    first = _publish(company, human, "Customer data is never logged", category="core_policy")
    second = _publish(company, human, "Budget above 50 EUR needs CFO approval", "core_policy")
    _publish(company, human, "Deploy with the blue/green procedure")  # not a policy
    items = policies(company=company)
    assert [(p.id, p.source, p.content) for p in items] == [
        ("config-0", "config", "PRs require 2 approvals"),
        ("config-1", "config", "No commits to main"),
        (str(first.fact_id), "fact", "Customer data is never logged"),
        (str(second.fact_id), "fact", "Budget above 50 EUR needs CFO approval"),
    ]
    fact_retract(company=company, actor=human, fact_id=first.fact_id)
    assert [p.source for p in policies(company=company)] == ["config", "config", "fact"]
    # As of before the retraction the retracted policy is back.
    assert len(policies(company=company, as_of=second.timestamp)) == 4
