"""Reads of org memory, by concern.

:mod:`.policies` (core policies: config first, then core_policy facts), :mod:`.facts` (fact
state now or as of a time, history, the live set), :mod:`.retrieval` (relevance ranking and
the org part of a prompt) and :mod:`.write_requests`.
"""

from orgmemory.selectors.facts import (
    FACT_NOT_FOUND,
    FACT_NOT_YET,
    FactView,
    fact_history,
    fact_state,
    live_facts,
)
from orgmemory.selectors.policies import PolicyView, policies
from orgmemory.selectors.retrieval import (
    EXTENDED_CATEGORIES,
    OrgPromptContext,
    PromptFact,
    org_prompt_context,
    query_facts,
)
from orgmemory.selectors.write_requests import (
    REQUEST_NOT_FOUND,
    write_request_for,
    write_requests_for,
)

__all__ = [
    "EXTENDED_CATEGORIES",
    "FACT_NOT_FOUND",
    "FACT_NOT_YET",
    "REQUEST_NOT_FOUND",
    "FactView",
    "OrgPromptContext",
    "PolicyView",
    "PromptFact",
    "fact_history",
    "fact_state",
    "live_facts",
    "org_prompt_context",
    "policies",
    "query_facts",
    "write_request_for",
    "write_requests_for",
]
