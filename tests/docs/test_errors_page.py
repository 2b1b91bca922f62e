"""The errors page's first table says what the API really answers (issue 32: "errors.md
lists none of the auth, bad-JSON and content-type codes a newcomer hits first")."""

import re
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from persistence.selectors import identity
from tests.conftest import make_agent_caller
from tests.docs import problem_codes

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


# --- every code: the page against the registry collected from the code ------------------------


def every_code_on_the_page() -> list[str]:
    """The first column of the "Every code" table."""
    section = PAGE.split("## Every code", 1)[1]
    return re.findall(r"^\| `([a-z0-9_]+)` \|", section, flags=re.MULTILINE)


def test_the_page_lists_every_code_the_api_can_answer_and_no_other():
    registry = problem_codes.collect()
    assert registry.unresolved == [], (
        "a code= the registry cannot read: name its source in problem_codes.FORWARDED"
    )
    on_page = every_code_on_the_page()
    assert len(on_page) == len(set(on_page)), "a code listed twice"
    codes = problem_codes.every_code()
    assert sorted(codes - set(on_page)) == [], "raised by the code, missing from the page"
    assert sorted(set(on_page) - codes) == [], "on the page, raised by nothing"


def test_the_registry_sees_each_kind_of_source():
    """The collector finds a code however it is given (a test of the test: each source
    below is one the page depends on)."""
    registry = problem_codes.collect()
    codes = problem_codes.every_code()
    assert "memory_not_found" in registry.codes  # a class's own code
    assert "batch_empty" in registry.codes  # a literal code= on a raise
    assert "job_requeue_forbidden" in registry.codes  # through a forwarder (require_operator)
    assert "superseded_not_found" in registry.codes  # through a forwarder handed cls=
    assert "fine_tune_run_not_found" in registry.codes  # an imported module's constant
    assert "outbound_url_refused" in registry.codes  # with errors=[…] alongside
    assert "payload_too_large" in registry.codes  # a DRF exception's own code
    assert "parse_error" not in codes  # … whose default is answered as malformed_request
    assert {"malformed_request", "throttled", "unsupported_media_type"} <= codes  # DRF table
    assert {"invalid_credentials", "credentials_revoked", "agent_inactive"} <= codes  # keys
    assert {"json_too_deep", "number_out_of_range", "namespace_arity"} <= codes  # carried
    assert "blank" not in codes  # a field's code inside errors[] is no problem code
    assert registry.statuses["memory_conflict"] == {409}


def test_a_new_code_or_a_removed_one_fails_the_comparison(tmp_path, monkeypatch):
    """The comparison catches both directions (fed a changed source tree)."""
    module = tmp_path / "memory" / "core" / "services" / "new_thing.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from synthorg.errors import ConflictError\n"
        "def thing_do():\n"
        "    raise ConflictError('No.', code='thing_already_done')\n"
    )
    for package in problem_codes.PACKAGES:
        if package != "memory":
            (tmp_path / package).symlink_to(problem_codes.ROOT / package)
    for child in (problem_codes.ROOT / "memory").iterdir():
        if child.name != "core":  # the tree without memory.core, plus the new module
            (tmp_path / "memory" / child.name).symlink_to(child)
    monkeypatch.setattr(problem_codes, "ROOT", tmp_path)
    codes = problem_codes.every_code()
    assert "thing_already_done" in codes
    assert "thing_already_done" not in every_code_on_the_page()
    assert "memory_conflict" not in codes  # memory.core (its errors) is not in this tree
    assert "memory_conflict" in every_code_on_the_page()
