from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from persistence.models import AgentApiKey
from persistence.selectors.identity import hash_api_key
from persistence.services.agents import api_key_issue, api_key_revoke
from synthorg.errors import ConflictError, InvalidInputError
from tests.persistence.factories import AgentFactory, MembershipFactory

ME = "/api/v1/me"


def _problem(response, status, code):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == f"https://synthorg.dev/problems/{code}"
    return body


def _client(header=None):
    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header)
    return client


@pytest.mark.django_db
def test_valid_key_authenticates_as_its_agent(caller):
    response = caller.client.get(ME)
    assert response.status_code == 200
    assert response.json() == {
        "kind": "agent",
        "company": {
            "id": caller.company.pk,
            "name": caller.company.name,
            "slug": caller.company.slug,
        },
        "agent": {
            "id": caller.agent.pk,
            "name": caller.agent.name,
            "role": "engineer",
            "department": "engineering",
            "seniority": "mid",
            "autonomy_level": "semi",
            "memory_level": "persistent",
            "is_active": True,
            "created_at": caller.agent.created_at.isoformat().replace("+00:00", "Z"),
        },
        "username": None,
        "role": "",
    }
    key = AgentApiKey.objects.get(agent=caller.agent)
    assert key.last_used_at is not None


@pytest.mark.django_db
def test_key_is_stored_only_as_digest(caller):
    key = AgentApiKey.objects.get(agent=caller.agent)
    assert caller.raw_key.startswith(f"sok_{key.prefix}_")
    assert key.key_hash == hash_api_key(caller.raw_key)
    assert caller.raw_key not in (key.key_hash, key.prefix, key.name)


@pytest.mark.django_db
def test_missing_credentials_is_401_with_challenge():
    body = _problem(_client().get(ME), 401, "not_authenticated")
    assert body["detail"] == "Authentication credentials were not provided."


@pytest.mark.django_db
def test_missing_credentials_sends_www_authenticate():
    response = _client().get(ME)
    assert response["WWW-Authenticate"] == 'Bearer realm="synthorg"'


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header",
    ["Bearer", "Token sok_abcdef123456_" + "x" * 40, "Bearer a b", "Basic dXNlcjpwdw=="],
)
def test_malformed_header_is_401(header):
    response = _client(header).get(ME)
    _problem(response, 401, "malformed_credentials")
    assert response["WWW-Authenticate"] == 'Bearer realm="synthorg"'


@pytest.mark.django_db
def test_malformed_key_is_401():
    _problem(_client("Bearer not-a-key").get(ME), 401, "malformed_credentials")


@pytest.mark.django_db
def test_wrong_secret_is_401(caller):
    key = AgentApiKey.objects.get(agent=caller.agent)
    forged = f"sok_{key.prefix}_" + "A" * 43
    response = _client(f"Bearer {forged}").get(ME)
    _problem(response, 401, "invalid_credentials")
    assert response["WWW-Authenticate"] == 'Bearer realm="synthorg"'


@pytest.mark.django_db
def test_unknown_key_is_401():
    _problem(_client("Bearer sok_000000000000_" + "B" * 43).get(ME), 401, "invalid_credentials")


@pytest.mark.django_db
def test_revoked_key_is_401(caller):
    key = AgentApiKey.objects.get(agent=caller.agent)
    api_key_revoke(key=key)
    _problem(caller.client.get(ME), 401, "credentials_revoked")
    with pytest.raises(ConflictError):
        api_key_revoke(key=key)


@pytest.mark.django_db
def test_expired_key_is_401(caller):
    AgentApiKey.objects.filter(agent=caller.agent).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    _problem(caller.client.get(ME), 401, "credentials_expired")


@pytest.mark.django_db
def test_key_with_future_expiry_works():
    agent = AgentFactory()
    issued = api_key_issue(agent=agent, expires_at=timezone.now() + timedelta(days=1))
    assert _client(f"Bearer {issued.raw_key}").get(ME).status_code == 200


@pytest.mark.django_db
def test_issuing_key_with_past_expiry_is_rejected_and_writes_nothing():
    agent = AgentFactory()
    with pytest.raises(InvalidInputError):
        api_key_issue(agent=agent, expires_at=timezone.now() - timedelta(minutes=1))
    assert AgentApiKey.objects.filter(agent=agent).count() == 0


@pytest.mark.django_db
def test_deactivated_agent_key_is_401(caller):
    caller.agent.is_active = False
    caller.agent.save()
    _problem(caller.client.get(ME), 401, "agent_inactive")


@pytest.mark.django_db
def test_human_session_resolves_to_membership(human_client, company):
    response = human_client.get(ME)
    assert response.status_code == 200
    body = response.json()
    assert body["kind"] == "human"
    assert body["company"]["id"] == company.pk
    assert body["role"] == "admin"
    assert body["username"] == human_client.membership.user.username


@pytest.mark.django_db
def test_human_in_two_companies_must_pick_one(human_client):
    other = MembershipFactory(user=human_client.membership.user, role="viewer")
    _problem(human_client.get(ME), 403, "no_company_membership")
    response = human_client.get(ME, HTTP_X_COMPANY=other.company.slug)
    assert response.status_code == 200
    assert response.json()["company"]["slug"] == other.company.slug
    assert response.json()["role"] == "viewer"
