"""Tuple namespaces through REST, tool calls and the export filter; flat strings unchanged."""

import json

import pytest

from memory.core.models.memory import Memory
from persistence.models import AuditEntry
from persistence.services.companies import company_config_set

pytestmark = pytest.mark.django_db

MEMORIES = "/api/v1/memories"
CALL = "/api/v1/memories/tools/call"


def post(client, url, body, expect):
    response = client.post(url, body, format="json")
    assert response.status_code == expect, response.content
    return response.json()


def org(caller):
    return ["org", caller.company.slug, caller.agent.name]


def test_store_renders_a_tuple_and_flat_strings_keep_working(caller):
    tupled = post(
        caller.client,
        MEMORIES,
        {"content": "Ana leads billing.", "category": "social", "namespace": org(caller)},
        201,
    )
    flat = post(
        caller.client,
        MEMORIES,
        {"content": "Deploys on Fridays.", "category": "semantic", "namespace": "ops/deploys"},
        201,
    )
    default = post(
        caller.client, MEMORIES, {"content": "Staging resets nightly.", "category": "semantic"}, 201
    )
    user = post(
        caller.client,
        MEMORIES,
        {"content": "Prefers short answers.", "category": "social", "namespace": ["user", "u-123"]},
        201,
    )
    stored = dict(Memory.objects.values_list("id", "namespace"))
    assert {str(k): v for k, v in stored.items()} == {
        tupled["id"]: f"org/{caller.company.slug}/{caller.agent.name}",
        flat["id"]: "ops/deploys",
        default["id"]: "default",
        user["id"]: "user/u-123",
    }
    listed = caller.client.get(MEMORIES, {"namespace": "user/u-123"}).json()["results"]
    assert [m["id"] for m in listed] == [user["id"]]


@pytest.mark.parametrize(
    ("namespace", "code", "message"),
    [
        (
            ["team", "x"],
            "namespace_scope_unknown",
            "no namespace template has the scope type 'team' (known: 'org', 'user')",
        ),
        (["user"], "namespace_arity", "a 'user' namespace has 2 parts ((user, {user_id})); got 1"),
        (["user", "a b"], "namespace_part_invalid", None),
    ],
)
def test_bad_tuples_are_400_with_their_code_and_store_nothing(caller, namespace, code, message):
    problem = post(
        caller.client,
        MEMORIES,
        {"content": "x y z", "category": "semantic", "namespace": namespace},
        400,
    )
    assert problem["code"] == code
    [error] = problem["errors"]
    assert (error["field"], error["code"]) == ("namespace", code)
    if message:
        assert error["message"] == message and problem["detail"] == f"namespace: {message}"
    assert not Memory.objects.exists()


def test_a_tuple_naming_another_agent_or_company_is_refused(caller, peer):
    other_agent = ["org", caller.company.slug, peer.agent.name]
    problem = post(
        caller.client,
        MEMORIES,
        {"content": "x", "category": "semantic", "namespace": other_agent},
        400,
    )
    assert problem["code"] == "namespace_bound_mismatch"
    assert problem["errors"][0]["message"] == (
        f"part 2 ({{agent}}) must be your agent {caller.agent.name!r}; got {peer.agent.name!r}"
    )
    other_company = ["org", "globex", caller.agent.name]
    assert (
        post(
            caller.client,
            MEMORIES,
            {"content": "x", "category": "semantic", "namespace": other_company},
            400,
        )["code"]
        == "namespace_bound_mismatch"
    )
    assert not Memory.objects.exists()


def test_malformed_values_are_400_before_the_templates(caller):
    cases = [
        ([], "namespace_invalid"),
        ([1, 2], "namespace_invalid"),
        ({"org": 1}, "namespace_invalid"),
    ]
    cases += [("   ", "blank"), ("x" * 101, "max_length")]  # flat names: the codes they had
    for value, code in cases:
        problem = post(
            caller.client,
            MEMORIES,
            {"content": "x", "category": "semantic", "namespace": value},
            400,
        )
        assert (problem["errors"][0]["field"], problem["errors"][0]["code"]) == ("namespace", code)
    assert not Memory.objects.exists()


def test_batch_names_the_bad_item_and_stores_nothing(caller):
    problem = post(
        caller.client,
        MEMORIES,
        {
            "memories": [
                {"content": "Fine.", "category": "semantic", "namespace": ["user", "u-1"]},
                {"content": "Bad.", "category": "semantic", "namespace": ["user", "u-1", "extra"]},
            ]
        },
        400,
    )
    assert problem["code"] == "namespace_arity"
    assert problem["errors"][0]["field"] == "memories[1].namespace"
    assert not Memory.objects.exists()


def test_search_and_context_filter_by_tuple_namespaces(caller):
    mine = post(
        caller.client,
        MEMORIES,
        {
            "content": "Billing deploys on Fridays.",
            "category": "semantic",
            "namespace": org(caller),
        },
        201,
    )
    post(
        caller.client,
        MEMORIES,
        {
            "content": "Billing deploys were on Mondays in 2024.",
            "category": "semantic",
            "namespace": "history",
        },
        201,
    )
    found = post(
        caller.client,
        f"{MEMORIES}/search",
        {"query": "billing deploys", "namespaces": [org(caller)]},
        200,
    )
    assert [hit["memory"]["id"] for hit in found["results"]] == [mine["id"]]
    both = post(
        caller.client,
        f"{MEMORIES}/search",
        {"query": "billing deploys", "namespaces": [org(caller), "history"]},
        200,
    )
    assert len(both["results"]) == 2
    context = post(
        caller.client,
        f"{MEMORIES}/context",
        {"query": "billing deploys", "token_budget": 500, "namespaces": [org(caller)]},
        200,
    )
    assert [entry["id"] for entry in context["included"]] == [mine["id"]]
    bad = post(
        caller.client,
        f"{MEMORIES}/search",
        {"query": "billing", "namespaces": ["history", ["team", "x"]]},
        400,
    )
    assert (bad["code"], bad["errors"][0]["field"]) == ("namespace_scope_unknown", "namespaces[1]")


def test_custom_templates_from_the_company_config(caller):
    company_config_set(
        company=caller.company, data={"memory": {"namespace_templates": [["team", "{team}"]]}}
    )
    stored = post(
        caller.client,
        MEMORIES,
        {"content": "x", "category": "semantic", "namespace": ["team", "payments"]},
        201,
    )
    assert Memory.objects.get(pk=stored["id"]).namespace == "team/payments"
    problem = post(
        caller.client,
        MEMORIES,
        {"content": "y", "category": "semantic", "namespace": ["user", "u-1"]},
        400,
    )
    assert (
        problem["errors"][0]["message"]
        == "no namespace template has the scope type 'user' (known: 'team')"
    )


def test_tools_take_tuple_namespaces(caller):
    stored = post(
        caller.client,
        CALL,
        {
            "name": "store_memory",
            "arguments": {"content": "Ana leads billing.", "namespace": ["user", "u-9"]},
        },
        200,
    )
    assert Memory.objects.get(pk=stored["data"]["id"]).namespace == "user/u-9"
    found = post(
        caller.client,
        CALL,
        {
            "name": "search_memory",
            "arguments": {"query": "who leads billing", "namespaces": [["user", "u-9"]]},
        },
        200,
    )
    assert [hit["memory"]["id"] for hit in found["data"]["results"]] == [stored["data"]["id"]]
    refused = post(
        caller.client,
        CALL,
        {
            "name": "store_memory",
            "arguments": {"content": "x", "namespace": ["org", "globex", "a"]},
        },
        400,
    )
    assert refused["code"] == "namespace_bound_mismatch"


def export(client, **params):
    response = client.get("/api/v1/export", params)
    return response, (
        [json.loads(line) for line in response.getvalue().decode().splitlines()]
        if response.status_code == 200
        else None
    )


def test_export_filters_by_tuple_namespace(caller, peer, human_client):
    mine = post(
        caller.client,
        MEMORIES,
        {
            "content": "Billing deploys on Fridays.",
            "category": "semantic",
            "namespace": org(caller),
        },
        201,
    )
    post(caller.client, MEMORIES, {"content": "Unrelated note.", "category": "semantic"}, 201)
    post(
        peer.client,
        MEMORIES,
        {"content": "Peer's org note.", "category": "semantic", "namespace": org(peer)},
        201,
    )
    response, lines = export(human_client, namespace=json.dumps(org(caller)))
    assert response.status_code == 200
    header, *rows = lines
    assert header["kinds"] == ["memory", "shared_knowledge", "archived_memory"]
    assert header["namespaces"] == [f"org/{caller.company.slug}/{caller.agent.name}"]
    assert [(row["type"], row["id"]) for row in rows] == [("memory", mine["id"])]
    audit = AuditEntry.objects.filter(action_type="content.exported").latest("created_at")
    assert audit.details["namespaces"] == header["namespaces"]
    # {agent} is bound to the agent filtered by: naming another agent then is refused
    refused = human_client.get(
        "/api/v1/export", {"agent": peer.agent.pk, "namespace": json.dumps(org(caller))}
    )
    assert refused.status_code == 400 and refused.json()["code"] == "namespace_bound_mismatch"
    assert refused.json()["errors"][0]["field"] == "namespace[0]"
    _, lines = export(human_client, namespace="default")
    assert [row["content"] for row in lines[1:]] == ["Unrelated note."]
    bad = human_client.get("/api/v1/export", {"namespace": "[not json"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["code"] == "namespace_invalid"
