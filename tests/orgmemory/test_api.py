"""The org-memory REST API: exact payloads, DB state after success and rejection, isolation."""

import uuid

import pytest

from orgmemory.models import OperationLogEntry, OrgFact, WriteAccessRequest
from orgmemory.services.facts import fact_publish
from persistence.models import AuditEntry
from persistence.services.companies import company_config_set

pytestmark = pytest.mark.django_db

BASE = "/api/v1/org/"


def _human_fact(company, human, content, category="procedure", **kwargs):
    return fact_publish(company=company, actor=human, content=content, category=category, **kwargs)


def test_senior_agent_publishes_201(senior):
    response = senior.client.post(
        BASE + "facts",
        {"content": "ADR-7: Postgres is the only database", "category": "adr", "tags": ["db"]},
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    fact = OrgFact.objects.get()
    assert body == {
        "fact_id": str(fact.fact_id),
        "version": 1,
        "category": "adr",
        "content": "ADR-7: Postgres is the only database",
        "tags": ["db"],
        "author": {
            "is_human": False,
            "agent_id": str(senior.agent.pk),
            "seniority": "senior",
            "autonomy_level": "semi",
        },
        "author_user": None,
        "approved_by": None,
        "created_at": body["created_at"],
        "updated_at": body["created_at"],
        "retracted_at": None,
    }
    revised = senior.client.post(
        BASE + "facts",
        {
            "content": "ADR-7 (rev): Postgres only",
            "category": "adr",
            "fact_id": str(fact.fact_id),
            "expected_version": 1,
        },
        format="json",
    )
    assert revised.status_code == 201
    assert (revised.json()["version"], revised.json()["fact_id"]) == (2, str(fact.fact_id))
    stale = senior.client.post(
        BASE + "facts",
        {"content": "x", "category": "adr", "fact_id": str(fact.fact_id), "expected_version": 1},
        format="json",
    )
    assert stale.status_code == 409
    assert stale.json()["code"] == "fact_version_conflict"
    assert OperationLogEntry.objects.count() == 2


def test_denied_write_is_403_with_rule_and_request_hint(junior):
    response = junior.client.post(
        BASE + "facts", {"content": "Tabs, not spaces", "category": "convention"}, format="json"
    )
    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    assert response.json() == {
        "type": "https://synthorg.dev/problems/org_write_denied",
        "title": "Access denied",
        "status": 403,
        "detail": "Write to org memory denied: Category 'convention' needs seniority 'senior' "
        "or above; the author is 'junior'.",
        "code": "org_write_denied",
        "errors": [],
        "category": "convention",
        "rule": {"allowed_seniority": "senior", "human_allowed": True},
        "reason": "Category 'convention' needs seniority 'senior' or above; the author is "
        "'junior'.",
        "can_request": True,
    }
    assert OrgFact.objects.count() == 0
    assert AuditEntry.objects.filter(action_type="org_fact.write_denied").count() == 1


def test_core_policy_by_agent_and_missing_rule(senior, human_client):
    core = senior.client.post(
        BASE + "facts", {"content": "x", "category": "core_policy"}, format="json"
    )
    assert core.status_code == 403
    assert (core.json()["rule"], core.json()["can_request"]) == (
        {"allowed_seniority": None, "human_allowed": True},
        False,  # an approved request would make the agent a core policy's author
    )
    entity = human_client.post(
        BASE + "facts", {"content": "A user is…", "category": "entity_definition"}, format="json"
    )
    assert entity.status_code == 403
    assert (entity.json()["rule"], entity.json()["can_request"]) == (None, False)
    human = human_client.post(
        BASE + "facts", {"content": "Be excellent", "category": "core_policy"}, format="json"
    )
    assert human.status_code == 201
    assert human.json()["author"]["is_human"] is True
    assert human.json()["author_user"] == human_client.membership.user.username


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"category": "adr"}, "content"),
        ({"content": "  ", "category": "adr"}, "content"),
        ({"content": "x", "category": "gossip"}, "category"),
        ({"content": "x", "category": "adr", "tags": "notalist"}, "tags"),
        ({"content": "x", "category": "adr", "fact_id": "nope"}, "fact_id"),
    ],
)
def test_bad_payload_is_400(senior, payload, field):
    response = senior.client.post(BASE + "facts", payload, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert response.json()["errors"][0]["field"] == field
    assert OperationLogEntry.objects.count() == 0


def test_policies_paginated_with_config_first(caller, company, human):
    company_config_set(company=company, data={"org_memory": {"core_policies": ["A", "B"]}})
    fact = _human_fact(company, human, "C", category="core_policy")
    body = caller.client.get(BASE + "policies", {"page_size": 2}).json()
    assert body["count"] == 3
    assert [(p["id"], p["source"], p["content"]) for p in body["results"]] == [
        ("config-0", "config", "A"),
        ("config-1", "config", "B"),
    ]
    page2 = caller.client.get(BASE + "policies", {"page_size": 2, "page": 2}).json()
    assert page2["results"] == [
        {
            "id": str(fact.fact_id),
            "source": "fact",
            "content": "C",
            "fact_id": str(fact.fact_id),
            "version": 1,
            "created_at": page2["results"][0]["created_at"],
        }
    ]
    before = caller.client.get(BASE + "policies", {"as_of": "2000-01-01T00:00:00Z"}).json()
    assert [p["content"] for p in before["results"]] == ["A", "B"]
    bad = caller.client.get(BASE + "policies", {"as_of": "yesterday"})
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "as_of"


def test_query_retract_history_and_time_travel(senior, company, human):
    deploy = _human_fact(company, human, "Deploy with the release train")
    _human_fact(company, human, "Lunch is at noon", category="convention")
    query = senior.client.post(BASE + "facts/query", {"context": "how to deploy"}, format="json")
    assert query.status_code == 200
    results = query.json()["results"]
    assert [(r["fact_id"], r["score"]) for r in results] == [(str(deploy.fact_id), 1.0)]

    retract = senior.client.post(
        BASE + f"facts/{deploy.fact_id}/retract", {"reason": "replaced"}, format="json"
    )
    assert retract.status_code == 200
    assert retract.json()["version"] == 2
    assert retract.json()["retracted_at"] is not None
    again = senior.client.post(BASE + f"facts/{deploy.fact_id}/retract", {}, format="json")
    assert again.status_code == 409
    assert again.json()["code"] == "fact_retracted"

    now = senior.client.post(BASE + "facts/query", {"context": "deploy"}, format="json")
    assert now.json()["results"] == []
    then = senior.client.post(
        BASE + "facts/query",
        {"context": "deploy", "as_of": deploy.timestamp.isoformat()},
        format="json",
    )
    assert [r["content"] for r in then.json()["results"]] == ["Deploy with the release train"]

    history = senior.client.get(BASE + f"facts/{deploy.fact_id}/history").json()
    assert [(h["version"], h["operation_type"], h["content"]) for h in history] == [
        (1, "PUBLISH", "Deploy with the release train"),
        (2, "RETRACT", None),
    ]
    assert history[1]["author"] == {
        "is_human": False,
        "agent_id": str(senior.agent.pk),
        "seniority": "senior",
        "autonomy_level": "semi",
    }
    at_v1 = senior.client.get(
        BASE + f"facts/{deploy.fact_id}", {"as_of": deploy.timestamp.isoformat()}
    ).json()
    assert (at_v1["version"], at_v1["retracted_at"]) == (1, None)
    listed = senior.client.get(BASE + "facts", {"category": "convention"}).json()
    assert [f["content"] for f in listed["results"]] == ["Lunch is at noon"]


def test_query_validation(caller):
    for payload, field in [
        ({"categories": ["nope"]}, "categories.0"),
        ({"categories": []}, "categories"),
        ({"limit": 0}, "limit"),
        ({"as_of": "soon"}, "as_of"),
    ]:
        response = caller.client.post(BASE + "facts/query", payload, format="json")
        assert response.status_code == 400, payload
        assert response.json()["errors"][0]["field"] == field


def test_write_request_flow_over_the_api(junior, peer, human_client):
    filed = junior.client.post(
        BASE + "write-requests",
        {
            "content": "Use UTC everywhere",
            "category": "convention",
            "justification": "Timezone incidents",
        },
        format="json",
    )
    assert filed.status_code == 201
    request_id = filed.json()["id"]
    assert filed.json()["status"] == "pending"
    assert filed.json()["requester_id"] == junior.agent.pk

    mine = junior.client.get(BASE + "write-requests").json()
    assert [r["id"] for r in mine["results"]] == [request_id]
    assert peer.client.get(BASE + "write-requests").json()["count"] == 0
    assert peer.client.get(BASE + f"write-requests/{request_id}").status_code == 404
    assert human_client.get(BASE + "write-requests", {"status": "pending"}).json()["count"] == 1

    agent_decides = junior.client.post(
        BASE + f"write-requests/{request_id}/decide", {"decision": "approve"}, format="json"
    )
    assert agent_decides.status_code == 403
    no_reason = human_client.post(
        BASE + f"write-requests/{request_id}/decide", {"decision": "reject"}, format="json"
    )
    assert no_reason.status_code == 400
    assert no_reason.json()["code"] == "rejection_reason_required"
    approved = human_client.post(
        BASE + f"write-requests/{request_id}/decide", {"decision": "approve"}, format="json"
    )
    assert approved.status_code == 200
    assert approved.json()["status"] == "approved"
    assert approved.json()["decided_by"] == human_client.membership.user.username
    twice = human_client.post(
        BASE + f"write-requests/{request_id}/decide",
        {"decision": "reject", "reason": "late"},
        format="json",
    )
    assert twice.status_code == 409
    assert twice.json()["code"] == "write_request_already_decided"
    fact = OrgFact.objects.get()
    history = junior.client.get(BASE + f"facts/{fact.fact_id}/history").json()
    assert history[0]["approved_by"] == human_client.membership.user.username
    assert history[0]["write_request_id"] == request_id


def test_humans_cannot_file_requests(human_client):
    response = human_client.post(
        BASE + "write-requests",
        {"content": "x", "category": "adr", "justification": "y"},
        format="json",
    )
    assert response.status_code == 403
    assert WriteAccessRequest.objects.count() == 0


def test_cross_company_isolation(junior, outsider, company, human):
    ours = _human_fact(company, human, "Our deploy procedure")
    request = junior.client.post(
        BASE + "write-requests",
        {"content": "x", "category": "adr", "justification": "y"},
        format="json",
    )
    assert request.status_code == 201
    request_id = request.json()["id"]
    client = outsider.client
    assert client.get(BASE + f"facts/{ours.fact_id}").status_code == 404
    assert client.get(BASE + f"facts/{ours.fact_id}/history").status_code == 404
    assert client.post(BASE + f"facts/{ours.fact_id}/retract", {}, format="json").status_code == 404
    revise = client.post(
        BASE + "facts",
        {"content": "hijack", "category": "procedure", "fact_id": str(ours.fact_id)},
        format="json",
    )
    assert revise.status_code == 404
    assert (
        client.post(BASE + "facts/query", {"context": "deploy"}, format="json").json()["results"]
        == []
    )
    assert client.get(BASE + "facts").json()["count"] == 0
    assert client.get(BASE + "write-requests").json()["count"] == 0
    assert client.get(BASE + f"write-requests/{request_id}").status_code == 404
    assert client.get(BASE + f"facts/{uuid.uuid4()}").status_code == 404
    assert OrgFact.objects.get(pk=ours.fact_id).version == 1


def test_viewer_may_query_but_not_write(company, human):
    from rest_framework.test import APIClient

    from tests.persistence.factories import MembershipFactory

    _human_fact(company, human, "Deploy on Tuesdays")
    viewer = MembershipFactory(company=company, role="viewer", user__password=None)
    client = APIClient()
    client.force_login(viewer.user)
    assert (
        client.post(BASE + "facts/query", {"context": "deploy"}, format="json").status_code == 200
    )
    write = client.post(BASE + "facts", {"content": "x", "category": "adr"}, format="json")
    assert write.status_code == 403
    assert OrgFact.objects.count() == 1


def test_unauthenticated_is_401(client):
    assert client.get(BASE + "policies").status_code == 401


def test_role_department_and_autonomy_rules_hold_on_the_rest_write_path(company):
    """Issue 33: org write rules honour the agent's role, department and autonomy."""
    from tests.conftest import make_agent_caller

    company_config_set(
        company=company,
        data={
            "org_memory": {
                "write_access": {
                    "rules": {
                        "adr": {
                            "allowed_seniority": "senior",
                            "allowed_roles": ["Architect"],
                            "allowed_departments": ["Platform"],
                            "min_autonomy": "semi",
                        }
                    }
                }
            }
        },
    )
    body = {"content": "ADR-9: one queue per tenant.", "category": "adr"}
    denied = {
        "role": dict(role="Analyst", department="Platform", autonomy_level="full"),
        "department": dict(role="architect", department="Sales", autonomy_level="full"),
        "autonomy": dict(role="architect", department="platform", autonomy_level="supervised"),
    }
    for dimension, fields in denied.items():
        agent = make_agent_caller(company=company, seniority="lead", **fields)
        response = agent.client.post(BASE + "facts", body, format="json")
        assert response.status_code == 403, (dimension, response.json())
        assert response.json()["code"] == "org_write_denied"
        assert dimension in response.json()["reason"], response.json()
        assert not OrgFact.objects.exists()
    writer = make_agent_caller(
        company=company,
        seniority="senior",
        role="architect",
        department="platform",
        autonomy_level="semi",
    )
    response = writer.client.post(BASE + "facts", body, format="json")
    assert response.status_code == 201, response.json()
    assert OrgFact.objects.get().content == "ADR-9: one queue per tenant."
