"""A principal of one company never reaches another company's objects."""

import pytest

from tests.persistence.factories import AgentFactory


@pytest.mark.django_db
def test_agent_list_is_scoped_to_company(caller, peer, outsider):
    response = caller.client.get("/api/v1/agents")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert {a["id"] for a in body["results"]} == {caller.agent.pk, peer.agent.pk}


@pytest.mark.django_db
def test_agent_detail_of_other_company_is_404(caller, outsider):
    response = caller.client.get(f"/api/v1/agents/{outsider.agent.pk}")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert caller.client.get(f"/api/v1/agents/{caller.agent.pk}").status_code == 200


@pytest.mark.django_db
def test_agent_list_filters(caller):
    AgentFactory(company=caller.company, seniority="senior", name="zed")
    response = caller.client.get("/api/v1/agents", {"seniority": "senior"})
    assert [a["name"] for a in response.json()["results"]] == ["zed"]
    bad = caller.client.get("/api/v1/agents", {"seniority": "emperor"})
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "seniority"


@pytest.mark.django_db
def test_company_config_is_the_callers(caller, outsider):
    from persistence.services.companies import company_config_set

    company_config_set(company=outsider.company, data={"memory": {"level": "persistent"}})
    mine = caller.client.get("/api/v1/company/config").json()
    theirs = outsider.client.get("/api/v1/company/config").json()
    assert mine["memory"]["level"] == "session"
    assert theirs["memory"]["level"] == "persistent"


@pytest.mark.django_db
def test_agents_never_read_secret_names_endpoints_or_server_paths(caller, human_client, settings):
    """Finding 9 (part of 3): any agent read its company's embedder URL, secret name and
    skill directory from /api/v1/company/config."""
    from persistence.services.companies import company_config_set

    settings.SYNTHORG_SECRET_GRANTS = f"SYNTHORG_SECRET_ACME={caller.company.pk}"
    company_config_set(
        company=caller.company,
        data={
            "memory": {
                "embedder": {
                    "model": "m",
                    "dims": 384,
                    "base_url": "https://embed.example.com/v1",
                    "api_key_env": "SYNTHORG_SECRET_ACME",
                },
                "procedural": {"skill_md_directory": "skills"},
                "storage": {"data_dir": "/data/memory"},
            }
        },
    )
    seen = caller.client.get("/api/v1/company/config").json()["memory"]
    assert seen["embedder"] == {
        "provider": None,
        "model": "m",
        "dims": 384,
        "base_url": "[redacted]",
        "api_key_env": "[redacted]",
    }
    assert seen["procedural"]["skill_md_directory"] == "[redacted]"
    assert seen["storage"]["data_dir"] == "[redacted]"
    assert seen["fine_tune"]["checkpoint_path"] is None  # unset stays null
    body = caller.client.get("/api/v1/company/config").content
    for secret in (b"SYNTHORG_SECRET_ACME", b"embed.example.com", b"skills", b"/data/memory"):
        assert secret not in body
    human = human_client.get("/api/v1/company/config").json()["memory"]  # members see it all
    assert human["embedder"]["api_key_env"] == "SYNTHORG_SECRET_ACME"
    assert human["procedural"]["skill_md_directory"] == "skills"
