"""The company configuration page (``/console/company/config``): a form generated from the
config's JSON schema, saved through ``company_config_set`` (revision check, audited diff)."""

import html
import json
import re

import pytest
from django.test import Client

from orgmemory.models import OrgFact
from orgmemory.services.policies import policy_add
from persistence.console.config_form import LEFT_OUT, config_form_schema
from persistence.models import AuditEntry, Company
from persistence.principal import Principal
from persistence.services.companies import company_config_set
from tests.persistence.factories import CompanyFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

URL = "/console/company/config"


def _client(company, role, **user):
    membership = MembershipFactory(company=company, role=role, user__password=None, **user)
    client = Client()
    client.force_login(membership.user)
    client.membership = membership
    return client


def _widget(page: str) -> dict:
    match = re.search(r'data-django-jsonform="([^"]*)"', page)
    return json.loads(html.unescape(match.group(1)))


def _shown(client) -> tuple[dict, int]:
    page = client.get(URL).content.decode()
    revision = int(re.search(r'name="expected_revision" value="(\d+)"', page).group(1))
    return json.loads(_widget(page)["data"]), revision


def _post(client, data: dict, revision: int):
    return client.post(URL, {"config": json.dumps(data), "expected_revision": revision})


def _state(company) -> tuple:
    company.refresh_from_db()
    return (
        company.config,
        company.config_revision,
        AuditEntry.objects.filter(company=company).count(),
    )


def test_schema_shows_what_does_something_with_defaults_and_plain_help():
    schema = config_form_schema()
    text = json.dumps(schema)
    retrieval = schema["properties"]["memory"]["properties"]["retrieval"]["properties"]
    assert retrieval["rrf_k"] == {
        "type": "integer",
        "title": "RRF k",
        # the meaning from docs/operating/configuration.md, then the YAML key and default
        "help_text": (
            "the k of RRF's 1/(k+rank) (also the hierarchical retriever's merge). "
            "YAML: memory.retrieval.rrf_k; default: 10."
        ),
        "minimum": 1,
        "maximum": 1000,
    }
    assert retrieval["strategy"]["enum"] == ["context", "tool_based", "self_editing"]
    # the hierarchical retriever and the re-ranking are honoured, so the form edits them
    assert retrieval["retriever"]["enum"] == ["flat", "hierarchical"]
    for present in (
        "max_workers_per_query",
        "reflective_retry_enabled",
        "rerank_cache_ttl_seconds",
    ):
        assert present in retrieval
    memory = schema["properties"]["memory"]["properties"]
    assert "storage" not in memory and "backend" not in memory
    assert list(memory["options"]["properties"]) == ["shared_knowledge_base", "session_ttl_hours"]
    assert "core_policies" not in schema["properties"]["org_memory"]["properties"]
    assert "$ref" not in text and "anyOf" not in text and "`" not in text
    embedder_model = memory["embedder"]["properties"]["model"]
    assert embedder_model["x-nullable"] is True
    assert embedder_model["help_text"].endswith("default: none. Leave empty for none.")


def test_admin_edits_one_field_and_the_save_is_audited_with_its_diff(company):
    admin = _client(company, "admin")
    company_config_set(
        company=company, data={"memory": {"storage": {"history_store": "postgresql"}}}
    )
    policy_add(
        company=company,
        actor=Principal.for_human(admin.membership.user, company, "admin"),
        content="Never push to main",
    )
    data, revision = _shown(admin)
    for path in LEFT_OUT:
        head, *rest = path.split(".")
        node = data.get(head, {})
        for part in rest[:-1]:
            node = node.get(part) or {}  # an unset optional section (embedder) is None
        assert rest[-1] not in node, path
    data["memory"]["retrieval"]["rrf_k"] = 30
    assert data["memory"]["embedder"] is None
    # the widget sends an optional section's fields empty: that is no override, not an error
    data["memory"]["embedder"] = dict.fromkeys(("model", "dims", "base_url", "api_key_env"), "")
    before = AuditEntry.objects.count()

    response = _post(admin, data, revision)

    assert response.status_code == 302, response.content.decode()[:2000]
    company.refresh_from_db()
    assert company.config_revision == revision + 1
    assert company.config["memory"]["retrieval"]["rrf_k"] == 30
    assert company.config["memory"]["storage"]["history_store"] == "postgresql"  # kept
    assert company.config["memory"]["embedder"] is None
    assert [f.content for f in OrgFact.objects.filter(company=company)] == ["Never push to main"]
    entry = AuditEntry.objects.order_by("-id").first()
    assert AuditEntry.objects.count() == before + 1
    assert (entry.action_type, entry.actor_user_id) == (
        "company.config_changed",
        admin.membership.user.pk,
    )
    assert entry.details["changes"] == [{"field": "memory.retrieval.rrf_k", "old": 10, "new": 30}]
    assert entry.details["via"] == "console"
    assert "Configuration saved (revision" in admin.get(URL).content.decode()


def test_an_invalid_value_is_shown_beside_its_field_and_nothing_is_saved(company):
    admin = _client(company, "admin")
    data, revision = _shown(admin)
    data["memory"]["retrieval"]["rrf_k"] = 0
    before = _state(company)

    response = _post(admin, data, revision)

    assert response.status_code == 400
    page = response.content.decode()
    assert _widget(page)["errorMap"] == {
        "memory§retrieval§rrf_k": ["Input should be greater than or equal to 1"]
    }
    assert "<code>memory.retrieval.rrf_k</code>: Input should be greater than or equal to 1" in (
        page
    )
    assert json.loads(_widget(page)["data"])["memory"]["retrieval"]["rrf_k"] == 0  # kept
    assert _state(company) == before


def test_a_stale_revision_is_a_409_and_nothing_is_saved(company):
    admin = _client(company, "admin")
    data, revision = _shown(admin)
    company_config_set(company=company, data={"memory": {"retrieval": {"rrf_k": 20}}})
    before = _state(company)
    data["memory"]["retrieval"]["rrf_k"] = 30

    response = _post(admin, data, revision)

    assert response.status_code == 409
    page = response.content.decode()
    assert (
        f"The configuration was changed by someone else (revision {revision + 1}, you edited "
        f"revision {revision}); reload it and apply your change again."
    ) in page
    assert 'id="config-reload"' in page
    assert _state(company) == before
    assert before[0]["memory"]["retrieval"]["rrf_k"] == 20


@pytest.mark.parametrize("role", ["operator", "viewer"])
def test_other_roles_can_neither_see_nor_save_it(company, role):
    client = _client(company, role, user__is_staff=True)
    data, revision = _shown(_client(company, "admin"))
    before = _state(company)
    page = client.get(URL)
    assert page.status_code == 403
    assert "Only the company&#x27;s admins and owners change its configuration." in (
        page.content.decode()
    )
    assert "data-django-jsonform" not in page.content.decode()
    data["memory"]["retrieval"]["rrf_k"] = 30
    assert _post(client, data, revision).status_code == 403
    assert _state(company) == before
    assert URL not in client.get("/console/policies/").content.decode()  # no nav link


def test_staff_of_another_company_only_ever_reaches_their_own(company):
    other = CompanyFactory(name="Other Co")
    outsider = _client(other, "admin", user__is_staff=True)
    data, revision = _shown(outsider)
    assert "Configuration of Other Co" in outsider.get(URL).content.decode()
    mine = _state(company)
    data["memory"]["retrieval"]["rrf_k"] = 42
    assert _post(outsider, data, revision).status_code == 302
    assert _state(company) == mine  # their save changed their company only
    assert Company.objects.get(pk=other.pk).config["memory"]["retrieval"]["rrf_k"] == 42


def test_staff_without_a_membership_get_no_form(db):
    user = UserFactory(is_staff=True, password=None)
    client = Client()
    client.force_login(user)
    response = client.get(URL)
    assert response.status_code == 403
    assert "data-django-jsonform" not in response.content.decode()
