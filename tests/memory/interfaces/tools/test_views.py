"""GET /memories/tools and POST /memories/tools/call: every tool, its success and its errors."""

import uuid

import jsonschema
import pytest

from memory.core.models.memory import Memory
from orgmemory.models import OrgFact, WriteAccessRequest
from persistence.models import AuditEntry
from persistence.services.companies import company_config_set
from synthorg.tools import registered_tools

pytestmark = pytest.mark.django_db

TOOLS = "/api/v1/memories/tools"
CALL = "/api/v1/memories/tools/call"
SEARCH_DEFS = ["search_memory", "recall_memory"]
WRITE_DEFS = ["store_memory", "forget_memory"]
SELF_EDITING_DEFS = [
    "core_memory_read",
    "core_memory_write",
    "archival_memory_search",
    "archival_memory_write",
    "recall_memory_read",
    "recall_memory_write",
]


def configure(company, **retrieval):
    company_config_set(company=company, data={"memory": {"retrieval": retrieval}})


def call(caller, name, expect=200, **arguments):
    response = caller.client.post(CALL, {"name": name, "arguments": arguments}, format="json")
    assert response.status_code == expect, response.content
    return response.json()


def store(caller, content, **fields):
    body = call(caller, "store_memory", content=content, **fields)
    return body["data"]["id"]


def test_every_definition_is_valid_json_schema_and_accepts_its_example():
    specs = {spec.name: spec for spec in registered_tools()}
    assert set(SEARCH_DEFS + WRITE_DEFS + SELF_EDITING_DEFS) <= set(specs)
    for spec in specs.values():
        definition = spec.openai_definition()
        assert definition["type"] == "function"
        assert definition["function"]["name"] == spec.name
        assert len(definition["function"]["description"]) > 20
        schema = definition["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert "$defs" not in str(schema) and "$ref" not in str(schema)
    search = specs["search_memory"].input_schema()
    validator = jsonschema.Draft202012Validator(search)
    assert validator.is_valid({"query": "deploys", "limit": 3, "categories": ["semantic"]})
    assert not validator.is_valid({"query": "deploys", "categories": ["bogus"]})
    assert not validator.is_valid({"limit": 3})
    forget = jsonschema.Draft202012Validator(specs["forget_memory"].input_schema())
    assert forget.is_valid({"id": str(uuid.uuid4()), "confirm": True, "reason": "wrong"})
    assert not forget.is_valid({"id": str(uuid.uuid4()), "confirm": False, "reason": "wrong"})
    assert not forget.is_valid({"id": str(uuid.uuid4())})


def test_definitions_follow_the_strategy(caller):
    assert caller.client.get(TOOLS).json() == {"strategy": "context", "tools": []}
    configure(caller.company, strategy="tool_based")
    body = caller.client.get(TOOLS).json()
    assert body["strategy"] == "tool_based"
    assert [t["function"]["name"] for t in body["tools"]] == SEARCH_DEFS + WRITE_DEFS
    caller.agent.memory_level = "none"
    caller.agent.save()
    names = [t["function"]["name"] for t in caller.client.get(TOOLS).json()["tools"]]
    assert names == SEARCH_DEFS  # an agent that cannot write is not offered write tools
    configure(caller.company, strategy="self_editing")
    body = caller.client.get(TOOLS).json()
    assert body["strategy"] == "self_editing"
    assert [t["function"]["name"] for t in body["tools"]] == SELF_EDITING_DEFS


def test_context_carries_tools_for_tool_strategies(caller):
    context = {"query": "deploy", "token_budget": 300, "include_org": False}
    plain = caller.client.post("/api/v1/memories/context", context, format="json").json()
    assert "tools" not in plain and "strategy" not in plain
    configure(caller.company, strategy="tool_based")
    body = caller.client.post("/api/v1/memories/context", context, format="json").json()
    assert body["strategy"] == "tool_based"
    assert [t["function"]["name"] for t in body["tools"]] == SEARCH_DEFS + WRITE_DEFS
    assert body["included"] == [] and "search_memory" in body["messages"][-1]["content"]


def test_store_search_recall_update_forget(caller):
    memory_id = store(caller, "The billing service deploys every Friday at noon UTC.", tags=["ops"])
    assert Memory.objects.get(pk=memory_id).tags == ["ops"]

    found = call(caller, "search_memory", query="when does billing deploy?", limit=3)
    assert found["data"]["results"][0]["memory"]["id"] == memory_id
    assert found["data"]["queries"] == ["when does billing deploy?"]
    assert found["content"].startswith(f"- [{memory_id}] (semantic, ")

    recalled = call(caller, "recall_memory", id=memory_id)
    assert recalled["data"]["content"] == "The billing service deploys every Friday at noon UTC."
    assert recalled["content"].endswith("The billing service deploys every Friday at noon UTC.")

    updated = call(caller, "update_memory", id=memory_id, content="Billing deploys on Thursdays.")
    assert updated["data"]["content"] == "Billing deploys on Thursdays."
    assert Memory.objects.get(pk=memory_id).content == "Billing deploys on Thursdays."

    refused = call(caller, "forget_memory", 400, id=memory_id)
    assert refused["code"] == "confirmation_required"
    refused = call(caller, "forget_memory", 400, id=memory_id, confirm="true", reason="wrong")
    assert refused["code"] == "confirmation_required"  # literally true, not a truthy string
    refused = call(caller, "forget_memory", 400, id=memory_id, confirm=True, reason="  ")
    assert refused["code"] == "reason_required"
    assert Memory.objects.filter(pk=memory_id).exists()
    assert not AuditEntry.objects.filter(action_type="memory.deleted").exists()

    forgot = call(caller, "forget_memory", id=memory_id, confirm=True, reason="outdated")
    assert forgot == {
        "content": f"Memory {memory_id} deleted.",
        "data": {"id": memory_id, "deleted": True},
    }
    assert not Memory.objects.filter(pk=memory_id).exists()
    entry = AuditEntry.objects.get(action_type="memory.deleted")
    assert entry.actor_agent_id == caller.agent.pk
    assert (entry.details["reason"], entry.details["via"]) == ("outdated", "rest")


def test_tool_errors_are_problems(caller, outsider):
    unknown = call(caller, "launch_rockets", 404)
    assert (unknown["code"], unknown["status"]) == ("unknown_tool", 404)
    bad = call(caller, "search_memory", 400, query="x", limit=0)
    assert bad["code"] == "invalid_tool_arguments"
    assert bad["errors"][0]["field"] == "limit"
    extra = call(caller, "search_memory", 400, query="x", colour="red")
    assert extra["errors"] == [
        {"field": "colour", "message": "unknown argument", "code": "extra_forbidden"}
    ]
    missing = call(caller, "recall_memory", 400)
    assert missing["errors"][0]["field"] == "id"
    not_object = caller.client.post(
        CALL, {"name": "recall_memory", "arguments": [1]}, format="json"
    )
    assert not_object.status_code == 400
    unknown_field = caller.client.post(CALL, {"name": "x", "argz": {}}, format="json")
    assert unknown_field.status_code == 400 and unknown_field.json()["errors"][0]["field"] == "argz"
    theirs = store(outsider, "Outsider secret: the vault code is 1234.")
    not_found = call(caller, "recall_memory", 404, id=theirs)
    assert not_found["code"] == "memory_not_found"
    gone = call(caller, "forget_memory", 404, id=theirs, confirm=True, reason="not mine")
    assert gone["code"] == "memory_not_found"
    assert Memory.objects.filter(pk=theirs).exists()


def test_store_refusals_write_nothing(caller):
    caller.agent.memory_level = "session"
    caller.agent.save()
    refused = call(caller, "store_memory", 400, content="Remember this.")
    assert refused["code"] == "session_id_required"
    assert not Memory.objects.exists()
    stored = call(caller, "store_memory", content="Remember this.", session_id="run-1")
    assert stored["data"]["stored"] is True
    ended = call(caller, "end_session", session_id="run-1", confirm=True, reason="run finished")
    assert ended["data"] == {"session_id": "run-1", "memories_purged": 1}
    assert AuditEntry.objects.get(action_type="memory.session_ended").details["reason"] == (
        "run finished"
    )


def test_shared_knowledge_tools(caller, peer, outsider):
    published = call(caller, "publish_shared_knowledge", content="Staging resets nightly at 02:00.")
    shared_id = published["data"]["id"]
    assert Memory.objects.get(pk=shared_id).is_shared
    # A peer finds it with search_memory and can read it in full by the id it got.
    hit = call(peer, "search_memory", query="staging reset")["data"]["results"][0]
    assert (hit["memory"]["id"], hit["is_shared"]) == (shared_id, True)
    assert call(peer, "recall_memory", id=shared_id)["data"]["content"] == (
        "Staging resets nightly at 02:00."
    )
    assert call(outsider, "recall_memory", 404, id=shared_id)["code"] == "memory_not_found"
    found = call(peer, "search_shared_knowledge", query="when does staging reset?")
    assert [r["memory"]["id"] for r in found["data"]["results"]] == [shared_id]
    assert (
        call(caller, "search_shared_knowledge", query="staging", exclude_self=True)["data"][
            "results"
        ]
        == []
    )
    denied = call(peer, "retract_shared_knowledge", 403, id=shared_id, confirm=True, reason="old")
    assert denied["code"] == "not_publisher"
    call(caller, "retract_shared_knowledge", id=shared_id, confirm=True, reason="old")
    assert not Memory.objects.filter(pk=shared_id).exists()
    entry = AuditEntry.objects.get(action_type="memory.shared_retracted")
    assert entry.details["reason"] == "old"


def test_get_memory_context_tool(caller):
    store(caller, "The billing service deploys every Friday at noon UTC.")
    body = call(caller, "get_memory_context", query="billing deploy", include_org=False)
    assert body["data"]["strategy"] == "context"
    assert body["data"]["included"][0]["kind"] == "memory"
    assert "deploys every Friday" in body["content"]


def test_org_tools(caller):
    company_config_set(
        company=caller.company, data={"org_memory": {"core_policies": ["Never deploy on Friday."]}}
    )
    policies = call(caller, "get_org_policies")
    assert policies["content"] == "- Never deploy on Friday."
    assert policies["data"]["results"][0]["source"] == "config"

    # A mid-level agent may not publish an ADR: the tool files a write request and says so.
    proposed = call(
        caller,
        "propose_org_fact",
        content="We use Postgres for everything.",
        category="adr",
        justification="Agreed in the design review.",
    )
    assert proposed["data"]["outcome"] == "requested"
    assert "filed write-access request" in proposed["content"]
    request = WriteAccessRequest.objects.get()
    assert (request.requester_id, request.status) == (caller.agent.pk, "pending")
    assert not OrgFact.objects.exists()

    caller.agent.seniority = "senior"
    caller.agent.save()
    published = call(caller, "propose_org_fact", content="We use Postgres.", category="adr")
    assert published["data"]["outcome"] == "published"
    fact_id = published["data"]["fact"]["fact_id"]
    assert OrgFact.objects.get(fact_id=fact_id).content == "We use Postgres."

    queried = call(caller, "query_org_facts", query="which database do we use?")
    assert [f["fact_id"] for f in queried["data"]["results"]] == [fact_id]

    refused = call(caller, "retract_org_fact", 400, fact_id=fact_id, confirm=True)
    assert refused["code"] == "reason_required"
    call(caller, "retract_org_fact", fact_id=fact_id, confirm=True, reason="wrong database")
    assert OrgFact.objects.get(fact_id=fact_id).retracted_at is not None

    # Core policies are human-authored: never filed, with or without a justification.
    refused = call(caller, "propose_org_fact", 403, content="Be nice.", category="core_policy")
    assert (refused["code"], refused["can_request"]) == ("org_write_denied", False)
    assert WriteAccessRequest.objects.count() == 1
    # No rule lets anyone write entity definitions: denied (and audited), not filed.
    denied = call(caller, "propose_org_fact", 403, content="A", category="entity_definition")
    assert denied["code"] == "org_write_denied"
    assert WriteAccessRequest.objects.count() == 1
    # Both denials are audited: the core policy's and the entity definition's.
    assert AuditEntry.objects.filter(action_type="org_fact.write_denied").count() == 2


def test_humans_cannot_call_tools(human_client):
    response = human_client.post(CALL, {"name": "search_memory", "arguments": {}}, format="json")
    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"


def test_approval_tools(caller, peer):
    from orgmemory.approval_models import ApprovalItem

    requested = call(
        caller,
        "request_approval",
        action_type="deploy:prod",
        title="Deploy billing 2.4 to production",
        risk_level="high",
        ttl_seconds=3600,
    )
    item = ApprovalItem.objects.get()
    assert requested["data"]["id"] == str(item.pk) or requested["data"]["id"] == item.pk
    assert (item.requester_agent_id, item.status, item.source) == (
        caller.agent.pk,
        "pending",
        "rest",
    )
    assert requested["content"].startswith(f"Approval requested: item {item.pk} is pending")
    bad = call(caller, "request_approval", 400, action_type="x", title="y", risk_level="extreme")
    assert bad["code"] == "invalid_tool_arguments"
    assert ApprovalItem.objects.count() == 1

    mine = call(caller, "list_my_approvals")["data"]["results"]
    assert [entry["title"] for entry in mine] == ["Deploy billing 2.4 to production"]
    assert call(caller, "list_my_approvals", status="approved")["data"]["results"] == []
    assert call(peer, "list_my_approvals")["data"]["results"] == []  # only one's own items


def test_report_execution_tool(caller):
    from memory.procedural.models import ExecutionReport

    reported = call(
        caller,
        "report_execution",
        task_title="Deploy billing",
        outcome="failed",
        error={"category": "timeout", "message": "the migration timed out"},
        tool_calls=[{"name": "run_migrations", "status": "failed", "duration_ms": 1200}],
        retry_count=1,
    )
    report = ExecutionReport.objects.get()
    assert reported["data"]["id"] == str(report.pk)
    assert (report.agent_id, report.outcome, report.task_title) == (
        caller.agent.pk,
        "failed",
        "Deploy billing",
    )
    bad = call(caller, "report_execution", 400, outcome="exploded")
    assert bad["code"] == "invalid_tool_arguments" and bad["errors"][0]["field"] == "outcome"
    assert ExecutionReport.objects.count() == 1
