"""The errors page's first table says what the API really answers (issue 32: "errors.md
lists none of the auth, bad-JSON and content-type codes a newcomer hits first")."""

from pathlib import Path

import pytest
from rest_framework.test import APIClient

from persistence.selectors import identity
from tests.conftest import make_agent_caller

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "agents" / "errors.md").read_text()
STORE = "/api/v1/memories"
BODY = {"content": "Billing deploys on Fridays.", "category": "semantic"}


def documented(code: str) -> bool:
    return f"`{code}`" in PAGE.split("## Every error path")[0]


@pytest.mark.django_db
def test_each_first_error_answers_the_documented_code():
    caller = make_agent_caller()
    anonymous = APIClient()
    seen = {}
    response = anonymous.post(STORE, BODY, format="json")
    assert response["WWW-Authenticate"] == 'Bearer realm="synthorg"'
    seen["none"] = (response.status_code, response.json()["code"])
    for name, header in (("basic", "Basic abc"), ("invalid", f"Bearer {caller.raw_key}x")):
        anonymous.credentials(HTTP_AUTHORIZATION=header)
        response = anonymous.post(STORE, BODY, format="json")
        seen[name] = (response.status_code, response.json()["code"])
    response = caller.client.post(STORE, data="{not json", content_type="application/json")
    seen["json"] = (response.status_code, response.json()["code"])
    response = caller.client.post(STORE, data="content=x", content_type="text/plain")
    seen["type"] = (response.status_code, response.json()["code"])
    response = caller.client.post(STORE, {**BODY, "colour": "red"}, format="json")
    seen["field"] = (response.status_code, response.json()["errors"][0]["code"])
    response = caller.client.get(f"{STORE}/not-a-uuid")
    seen["id"] = (response.status_code, response.json()["code"])

    assert seen == {
        "none": (401, "not_authenticated"),
        "basic": (401, "malformed_credentials"),
        "invalid": (401, "invalid_credentials"),
        "json": (400, "malformed_request"),
        "type": (415, "unsupported_media_type"),
        "field": (400, "unknown_field"),
        "id": (404, "not_found"),
    }
    assert all(documented(code) for _, code in seen.values())


def test_every_key_problem_is_on_the_page():
    problems = [
        value for value in vars(identity).values() if isinstance(value, identity.KeyProblem)
    ]
    assert len(problems) >= 5
    assert [p.code for p in problems if not documented(p.code)] == []
