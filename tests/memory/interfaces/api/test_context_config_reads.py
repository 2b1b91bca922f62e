"""A context request reads the company config once (issue 34) and hands it down.

Counted with the config accessor's own cache statistics: every
``persistence.selectors.config.company_config`` call is one hit or miss of its cache.
"""

import pytest

from persistence.selectors.config import _parsed
from persistence.services.companies import company_config_set

pytestmark = pytest.mark.django_db

URL = "/api/v1/memories/context"


def _reads() -> int:
    info = _parsed.cache_info()
    return info.hits + info.misses


@pytest.mark.parametrize(
    "memory",
    [
        {},
        {"retrieval": {"strategy": "self_editing"}},
        {"retrieval": {"strategy": "tool_based"}},
        {"retrieval": {"retriever": "hierarchical"}},
        {"retrieval": {"diversity_penalty_enabled": True}},
    ],
    ids=["context", "self_editing", "tool_based", "hierarchical", "diversity"],
)
def test_one_context_call_reads_the_config_once(caller, memory):
    company_config_set(company=caller.company, data={"memory": memory})
    stored = caller.client.post(
        "/api/v1/memories",
        {"content": "The billing service deploys every Friday.", "category": "semantic"},
        format="json",
    )
    assert stored.status_code == 201, stored.json()
    before = _reads()
    response = caller.client.post(
        URL, {"query": "billing deploy", "token_budget": 400, "include_org": True}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert _reads() - before == 1
