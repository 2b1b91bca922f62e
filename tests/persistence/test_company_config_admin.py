"""Loading and editing a company's config: the management command and the admin form."""

import pytest
from django.core.management import CommandError, call_command
from django.utils.html import escape

from persistence.admin import IGNORED_SECTIONS
from persistence.models import Company
from persistence.selectors.config import company_config
from persistence.services.companies import SECTION_MISSPELT, company_config_from_yaml
from synthorg.errors import InvalidInputError
from tests.persistence.factories import CompanyFactory

VALID = """
memory:
  level: persistent
  retrieval:
    relevance_weight: 0.6
    recency_weight: 0.4
org_memory:
  core_policies: ["Never log customer data."]
"""

INVALID = """
memory:
  retrieval:
    relevance_weight: 0.6
    max_memories: 500
"""


@pytest.fixture
def yaml_file(tmp_path):
    def write(text: str):
        path = tmp_path / "company.yaml"
        path.write_text(text)
        return path

    return write


@pytest.mark.django_db
def test_load_company_config_stores_and_bumps_revision(yaml_file, capsys):
    company = CompanyFactory()
    call_command("load_company_config", company.slug, str(yaml_file(VALID)))
    company.refresh_from_db()
    assert company.config_revision == 2
    config = company_config(company)
    assert config.memory.retrieval.recency_weight == 0.4
    assert config.org_memory.core_policies == ("Never log customer data.",)
    assert f"into '{company.slug}' (revision 2)" in capsys.readouterr().out


@pytest.mark.django_db
def test_load_company_config_names_each_bad_field_and_changes_nothing(yaml_file):
    company = CompanyFactory()
    before = (company.config, company.config_revision)
    with pytest.raises(CommandError) as caught:
        call_command("load_company_config", company.slug, str(yaml_file(INVALID)))
    message = str(caught.value)
    assert "memory.retrieval.relevance_weight: relevance_weight + recency_weight" not in message
    assert "memory.retrieval.max_memories: Input should be less than or equal to 100" in message
    company.refresh_from_db()
    assert (company.config, company.config_revision) == before


@pytest.mark.django_db
def test_load_company_config_create_and_unknown_company(yaml_file):
    with pytest.raises(CommandError, match="no company 'Acme Labs'"):
        call_command("load_company_config", "Acme Labs", str(yaml_file(VALID)))
    call_command("load_company_config", "Acme Labs", str(yaml_file(VALID)), "--create")
    company = Company.objects.get(name="Acme Labs")
    assert company.slug == "acme-labs"
    assert company_config(company).memory.level == "persistent"


@pytest.mark.django_db
def test_load_company_config_rejects_non_yaml(yaml_file):
    company = CompanyFactory()
    with pytest.raises(CommandError, match="is not valid YAML"):
        call_command("load_company_config", company.slug, str(yaml_file("memory: [unclosed")))
    with pytest.raises(CommandError, match="must be a YAML mapping"):
        call_command("load_company_config", company.slug, str(yaml_file("- a list")))


@pytest.mark.django_db
def test_cached_accessor_sees_config_changes():
    from persistence.services.companies import company_config_set

    company = CompanyFactory()
    assert company_config(company).memory.retrieval.max_memories == 20
    company_config_set(company=company, data={"memory": {"retrieval": {"max_memories": 7}}})
    assert company_config(company).memory.retrieval.max_memories == 7
    assert company_config(Company.objects.get(pk=company.pk)).memory.retrieval.max_memories == 7


@pytest.mark.django_db
def test_admin_refuses_invalid_config_naming_the_field(admin_client):
    company = CompanyFactory(name="Initech", slug="initech")
    url = f"/admin/persistence/company/{company.pk}/change/"
    response = admin_client.post(
        url,
        {
            "name": "Initech",
            "slug": "initech",
            "config_yaml": INVALID,
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 200  # the form is shown again with the error
    assert "memory.retrieval.max_memories: Input should be less than or equal to 100" in (
        response.content.decode()
    )
    company.refresh_from_db()
    assert company.config_revision == 1


@pytest.mark.django_db
def test_admin_saves_valid_config(admin_client):
    company = CompanyFactory(name="Initech", slug="initech")
    response = admin_client.post(
        f"/admin/persistence/company/{company.pk}/change/",
        {
            "name": "Initech",
            "slug": "initech",
            "config_yaml": VALID,
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302
    company.refresh_from_db()
    assert company.config_revision == 2
    assert company.config["memory"]["retrieval"]["relevance_weight"] == 0.6


def _admin_post(admin_client, company, config_yaml):
    return admin_client.post(
        f"/admin/persistence/company/{company.pk}/change/",
        {
            "name": company.name,
            "slug": company.slug,
            "config_yaml": config_yaml,
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
        },
        follow=True,
    )


@pytest.mark.django_db
def test_admin_says_which_sections_it_ignored(admin_client):
    """A whole company file may carry sections this service does not read: saved, and the
    operator is told which were ignored (before: dropped without a word)."""
    company = CompanyFactory(name="Initech", slug="initech")
    text = "persistence:\n  sqlite: {path: x.db}\nagents: []\nmemory:\n  level: persistent\n"
    response = _admin_post(admin_client, company, text)
    assert response.status_code == 200
    messages = [str(m) for m in response.context["messages"]]
    assert IGNORED_SECTIONS.format(names="agents, persistence") in messages
    company.refresh_from_db()
    assert company.config_revision == 2
    assert "persistence" not in company.config and company_config(company).memory.level == (
        "persistent"
    )


@pytest.mark.django_db
def test_a_misspelt_section_is_refused_not_dropped(admin_client, yaml_file):
    company = CompanyFactory(name="Initech", slug="initech")
    text = "memroy:\n  level: persistent\n"
    response = _admin_post(admin_client, company, text)
    message = escape(SECTION_MISSPELT.format(key="memroy", section="memory"))
    assert message in response.content.decode()
    with pytest.raises(CommandError, match="did you mean 'memory'"):
        call_command("load_company_config", company.slug, str(yaml_file(text)))
    with pytest.raises(InvalidInputError) as caught:
        company_config_from_yaml("org_memroy: {}\n")
    assert [(e["field"], e["code"]) for e in caught.value.errors] == [
        ("org_memroy", "unknown_section")
    ]
    company.refresh_from_db()
    assert (company.config_revision, company.config) == (1, {})
