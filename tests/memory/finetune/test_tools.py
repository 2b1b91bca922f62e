"""The agent-facing fine-tune tools over MCP (the official SDK client against the live ASGI
server) and the tool-call endpoint: read-only status and active embedder, the company's own
runs only, nothing an agent could start, cancel or roll back."""

from __future__ import annotations

import pytest

from memory.finetune.models import AdapterCheckpoint, FineTuneRun
from memory.finetune.services import FineTunePlan, fine_tune_execute, fine_tune_start
from memory.finetune.tools import NO_RUN
from persistence.principal import Principal
from tests.memory.finetune.data import QueryEmbedder, crafted, enable, store_pairs
from tests.persistence.factories import CompanyFactory, MembershipFactory
from tests.synthorg.test_mcp_server import committed, live_server_url, mcp, structured  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)
PAIRS = 120
CALL = "/api/v1/memories/tools/call"


def admin(company) -> Principal:
    membership = MembershipFactory(company=company, role="admin")
    return Principal.for_human(membership.user, company, "admin")


def promoted_run(company, agent, tmp_path, settings) -> FineTuneRun:
    docs, queries = crafted(PAIRS)
    store_pairs(agent, docs)
    enable(company, tmp_path, settings)
    run = fine_tune_start(company=company, plan=FineTunePlan(), principal=admin(company))
    assert fine_tune_execute(run.pk, embedder=QueryEmbedder(queries, docs)) == "promoted"
    return FineTuneRun.objects.select_related("checkpoint").get(pk=run.pk)


def test_status_and_active_embedder_over_mcp(live_server_url, committed, tmp_path, settings):  # noqa: F811
    caller = committed.agent()

    async def before(session):
        tools = await session.list_tools()
        status = await session.call_tool("get_fine_tune_status", {})
        active = await session.call_tool("get_active_embedder", {})
        return tools, status, active

    _, (tools, status, active) = mcp(live_server_url, caller.raw_key, before)
    listed = {tool.name: tool for tool in tools.tools}
    for name in ("get_fine_tune_status", "get_active_embedder"):
        assert listed[name].annotations.destructive_hint is False
    # No tool starts, cancels, rolls back or deletes: those are the admins' (humans').
    assert not [name for name in listed if "fine_tune" in name and name != "get_fine_tune_status"]
    assert listed["get_fine_tune_status"].input_schema["properties"]["run_id"]["anyOf"][0] == {
        "type": "string",
        "format": "uuid",
    }
    assert not status.is_error and structured(status) == {"run": None}
    assert status.content[0].text == NO_RUN
    assert structured(active) == {
        "embedder_id": "all-MiniLM-L6-v2-onnx-int8pc", "dims": 384, "enabled": False,
        "checkpoint": None, "applied": False,
    }  # fmt: skip

    run = promoted_run(caller.agent.company, caller.agent, tmp_path, settings)
    checkpoint = AdapterCheckpoint.objects.get(company=caller.agent.company)
    stranger = committed.agent()
    foreign = FineTuneRun.objects.create(
        company=stranger.agent.company, method="linear_adapter", embedder_id="x", dims=4,
        epochs_total=1, created_at=run.created_at, updated_at=run.created_at,
    )  # fmt: skip

    async def after(session):
        return (
            await session.call_tool("get_fine_tune_status", {}),
            await session.call_tool("get_fine_tune_status", {"run_id": str(run.pk)}),
            await session.call_tool("get_fine_tune_status", {"run_id": str(foreign.pk)}),
            await session.call_tool("get_active_embedder", {}),
            await session.call_tool("get_fine_tune_status", {"run_id": "nope"}),
        )

    _, (latest, by_id, other, active, bad) = mcp(live_server_url, caller.raw_key, after)
    figures = run.figures
    expected = {
        "id": str(run.pk), "method": "linear_adapter", "status": "promoted",
        "embedder_id": "all-MiniLM-L6-v2-onnx-int8pc", "epochs_done": 10, "epochs_total": 10,
        "progress": 1.0,
        "gate": {"before": figures["before"], "after": figures["after"],
                 "ndcg_gain": figures["ndcg_gain"], "min_gain": 0.05},
        "checkpoint": str(checkpoint.pk),
        "created_at": run.created_at.isoformat().replace("+00:00", "Z"),
        "started_at": run.started_at.isoformat().replace("+00:00", "Z"),
        "finished_at": run.completed_at.isoformat().replace("+00:00", "Z"),
    }  # fmt: skip
    assert structured(latest) == {"run": expected} == structured(by_id)
    assert latest.content[0].text == (
        f"Fine-tune run {run.pk}: promoted (10/10 epochs). Held-out nDCG@10 "
        f"{figures['before']['ndcg@10']:.3f} -> {figures['after']['ndcg@10']:.3f} "
        f"(gain {figures['ndcg_gain']:+.3f}, margin 0.05). Adapter {checkpoint.pk}."
    )
    # Settings, pair counts and error text stay with the admins.
    assert not {"params", "figures", "error"} & set(structured(latest)["run"])
    assert other.is_error
    assert (structured(other)["status"], structured(other)["code"]) == (
        404,
        "fine_tune_run_not_found",
    )
    assert structured(bad)["code"] == "invalid_tool_arguments"
    assert structured(active) == {
        "embedder_id": "all-MiniLM-L6-v2-onnx-int8pc", "dims": 384, "enabled": True,
        "checkpoint": str(checkpoint.pk), "applied": True,
    }  # fmt: skip
    assert active.content[0].text == (
        "Searches embed queries with all-MiniLM-L6-v2-onnx-int8pc (384 dims) through the "
        f"company's adapter {checkpoint.pk}."
    )


def test_tool_call_endpoint_answers_as_mcp_does_and_writes_nothing(caller, tmp_path, settings):
    run = promoted_run(caller.company, caller.agent, tmp_path, settings)
    response = caller.client.post(
        CALL, {"name": "get_fine_tune_status", "arguments": {}}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["data"]["run"]["id"] == str(run.pk)
    assert body["data"]["run"]["gate"]["ndcg_gain"] == run.figures["ndcg_gain"]
    # A company whose only run is another's sees none.
    outsider_company = CompanyFactory()
    from tests.conftest import make_agent_caller

    outsider = make_agent_caller(company=outsider_company)
    response = outsider.client.post(
        CALL, {"name": "get_fine_tune_status", "arguments": {}}, format="json"
    )
    assert response.json() == {"content": NO_RUN, "data": {"run": None}}
    response = outsider.client.post(
        CALL,
        {"name": "get_fine_tune_status", "arguments": {"run_id": str(run.pk)}},
        format="json",
    )
    assert (response.status_code, response.json()["code"]) == (404, "fine_tune_run_not_found")
    assert FineTuneRun.objects.get(pk=run.pk).status == "promoted"
