"""The strategy protocol: which strategy the config selects and what each prepares."""

import pytest

from memory.prompting.context import ContextRequest
from memory.prompting.strategies import (
    TOOL_BASED_INSTRUCTION,
    TOOL_BASED_WRITE_INSTRUCTION,
    ContextInjectionStrategy,
    SelfEditingMemoryStrategy,
    ToolBasedInjectionStrategy,
    strategy_for,
)
from orgmemory.selectors.policies import CORE_POLICIES_HEADER
from persistence.selectors.config import company_config
from persistence.services.companies import company_config_set
from synthorg.errors import InvalidInputError

pytestmark = pytest.mark.django_db


def configure(company, strategy, policies=()):
    company_config_set(
        company=company,
        data={
            "memory": {"retrieval": {"strategy": strategy}},
            "org_memory": {"core_policies": list(policies)},
        },
    )


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("context", ContextInjectionStrategy),
        ("tool_based", ToolBasedInjectionStrategy),
        ("self_editing", SelfEditingMemoryStrategy),
    ],
)
def test_config_selects_the_strategy(caller, name, cls):
    configure(caller.company, name)
    strategy = strategy_for(caller.agent, company_config(caller.company).memory)
    assert type(strategy) is cls and strategy.strategy_name == name


def test_tool_based_prepares_policies_and_the_tool_instruction(caller):
    configure(caller.company, "tool_based", policies=["Never deploy on Fridays."])
    caller.client.post(
        "/api/v1/memories", {"content": "Deploys happen at noon.", "category": "semantic"}
    )
    prepared = strategy_for(caller.agent, company_config(caller.company).memory).prepare_messages(
        ContextRequest.build(query_text="deploy", token_budget=500)
    )
    assert prepared.messages == [
        {"role": "system", "content": CORE_POLICIES_HEADER + "\n- Never deploy on Fridays."},
        {"role": "system", "content": TOOL_BASED_INSTRUCTION + TOOL_BASED_WRITE_INSTRUCTION},
    ]
    assert prepared.included == [] and prepared.dropped == []
    caller.agent.memory_level = "none"
    prepared = strategy_for(caller.agent, company_config(caller.company).memory).prepare_messages(
        ContextRequest.build(query_text="deploy", token_budget=500, include_org=False)
    )
    assert prepared.messages == [{"role": "system", "content": TOOL_BASED_INSTRUCTION}]


@pytest.mark.parametrize("strategy", ["context", "tool_based", "self_editing"])
def test_every_strategy_validates_its_input(caller, strategy):
    configure(caller.company, strategy)
    with pytest.raises(InvalidInputError):
        strategy_for(caller.agent, company_config(caller.company).memory).prepare_messages(
            ContextRequest.build(query_text=" ", token_budget=10)
        )
    with pytest.raises(InvalidInputError):
        strategy_for(caller.agent, company_config(caller.company).memory).prepare_messages(
            ContextRequest.build(query_text="x", token_budget=-1)
        )
