"""The verified-key cache: a key's later uses skip the ORM join, and never outlive a change."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from persistence.models import Agent, AgentApiKey, Company
from persistence.selectors import identity
from persistence.selectors.identity import agent_for_api_key, hash_api_key
from persistence.selectors.verified_keys import VerifiedKeyCache, verified_keys
from persistence.services.agents import api_key_issue, api_key_revoke
from tests.conftest import make_agent_caller
from tests.persistence.factories import AgentFactory, CompanyFactory

ME = "/api/v1/me"


def _warm(caller) -> None:
    """Two uses: the first stamps ``last_used_at`` (a new row version), the second caches."""
    for _ in range(2):
        assert caller.client.get(ME).status_code == 200
    assert verified_keys.get(hash_api_key(caller.raw_key)) is not None


def _problem_code(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    return response.json()["code"]


@pytest.mark.django_db
def test_a_cached_key_costs_one_version_query_instead_of_the_join(caller):
    _warm(caller)
    hits = verified_keys.hits
    with CaptureQueriesContext(connection) as queries:
        response = caller.client.get(ME)
    assert response.status_code == 200
    assert response.json()["agent"]["id"] == caller.agent.pk
    assert response.json()["company"]["id"] == caller.company.pk
    assert verified_keys.hits == hits + 1
    auth = [q["sql"] for q in queries.captured_queries if "agentapikey" in q["sql"]]
    assert len(auth) == 1
    assert "ctid" in auth[0] and "WHERE k.id =" in auth[0]


@pytest.mark.django_db
def test_the_version_check_is_a_prepared_statement_on_a_generic_plan(caller):
    """Parsed once per connection; from its sixth use PostgreSQL runs it without planning."""
    _warm(caller)
    for _ in range(7):
        assert caller.client.get(ME).status_code == 200
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT custom_plans, generic_plans FROM pg_prepared_statements "
            "WHERE statement LIKE %s",
            ["%ctid%WHERE k.id =%"],
        )
        assert cursor.fetchall() == [(5, 3)]


@pytest.mark.django_db
def test_revoking_a_cached_key_refuses_it_on_the_next_request(caller):
    _warm(caller)
    api_key_revoke(key=AgentApiKey.objects.get(agent=caller.agent))
    assert _problem_code(caller.client.get(ME), 401) == "credentials_revoked"
    assert _problem_code(caller.client.get(ME), 401) == "credentials_revoked"
    assert AgentApiKey.objects.get(agent=caller.agent).revoked_at is not None
    assert verified_keys.get(hash_api_key(caller.raw_key)) is None


@pytest.mark.django_db
def test_a_change_made_without_the_service_is_seen_too(caller):
    """Invalidation is by row version, not by an in-process hook: a raw UPDATE (any other
    process, a DBA's psql) is seen by the next request."""
    _warm(caller)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE persistence_agentapikey SET revoked_at = now() WHERE agent_id = %s",
            [caller.agent.pk],
        )
    assert _problem_code(caller.client.get(ME), 401) == "credentials_revoked"


@pytest.mark.django_db(transaction=True)
def test_a_revocation_committed_on_another_connection_is_seen_at_once():
    caller = make_agent_caller()
    _warm(caller)
    key_id = AgentApiKey.objects.get(agent=caller.agent).pk

    def revoke_elsewhere():
        try:
            api_key_revoke(key=AgentApiKey.objects.get(pk=key_id))
        finally:
            connections.close_all()  # this thread's own connection

    other = threading.Thread(target=revoke_elsewhere)
    other.start()
    other.join()
    assert _problem_code(caller.client.get(ME), 401) == "credentials_revoked"


@pytest.mark.django_db
def test_rotating_a_key_retires_the_old_one_and_the_new_one_works(caller):
    _warm(caller)
    old = AgentApiKey.objects.get(agent=caller.agent)
    new = api_key_issue(agent=caller.agent)
    api_key_revoke(key=old)
    assert _problem_code(caller.client.get(ME), 401) == "credentials_revoked"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {new.raw_key}")
    assert client.get(ME).json()["agent"]["id"] == caller.agent.pk


@pytest.mark.django_db
def test_deactivating_the_agent_of_a_cached_key_refuses_it(caller):
    _warm(caller)
    Agent.objects.filter(pk=caller.agent.pk).update(is_active=False)
    assert _problem_code(caller.client.get(ME), 401) == "agent_inactive"


@pytest.mark.django_db
def test_deleting_the_agent_of_a_cached_key_refuses_it(caller):
    _warm(caller)
    Agent.objects.filter(pk=caller.agent.pk).delete()
    assert _problem_code(caller.client.get(ME), 401) == "invalid_credentials"


@pytest.mark.django_db
def test_a_change_to_the_company_is_seen_by_the_next_request(caller):
    _warm(caller)
    Company.objects.filter(pk=caller.company.pk).update(name="Renamed Inc", config_revision=7)
    body = caller.client.get(ME).json()
    assert body["company"] == {
        "id": caller.company.pk,
        "name": "Renamed Inc",
        "slug": caller.company.slug,
    }
    assert agent_for_api_key(caller.raw_key).key.agent.company.config_revision == 7


@pytest.mark.django_db
def test_a_cached_key_still_expires_on_the_clock(caller, monkeypatch):
    expires = timezone.now() + timedelta(hours=1)
    AgentApiKey.objects.filter(agent=caller.agent).update(expires_at=expires)
    _warm(caller)

    class Later:
        @staticmethod
        def now():
            return expires + timedelta(seconds=1)

    monkeypatch.setattr(identity, "timezone", Later)
    result = agent_for_api_key(caller.raw_key)
    assert result.key is None
    assert result.error.code == "credentials_expired"


@pytest.mark.django_db
def test_keys_of_two_companies_never_see_each_other():
    ours = make_agent_caller(company=CompanyFactory())
    theirs = make_agent_caller(company=CompanyFactory())
    _warm(ours)
    _warm(theirs)
    for _ in range(3):
        for who in (ours, theirs, ours):
            body = who.client.get(ME).json()
            assert body["agent"]["id"] == who.agent.pk
            assert body["company"]["id"] == who.company.pk
    assert ours.company.pk != theirs.company.pk


@pytest.mark.django_db
def test_each_use_gets_its_own_objects(caller):
    _warm(caller)
    first = agent_for_api_key(caller.raw_key).key
    first.agent.name = "changed by one request"
    first.agent.company.name = "changed too"
    first.last_used_at = None
    second = agent_for_api_key(caller.raw_key).key
    assert second.agent.name == caller.agent.name
    assert second.agent.company.name == caller.company.name
    assert second.last_used_at is not None
    assert second.agent is not first.agent
    assert second.agent.company is not first.agent.company


@pytest.mark.django_db
def test_unknown_and_wrong_keys_are_not_cached(caller):
    size = len(verified_keys)
    wrong = caller.raw_key[:-4] + ("AAAA" if not caller.raw_key.endswith("AAAA") else "BBBB")
    for raw_key in (wrong, "sok_abcdefgh_" + "x" * 30):
        assert agent_for_api_key(raw_key).error.code == "invalid_credentials"
        assert verified_keys.get(hash_api_key(raw_key)) is None
    assert len(verified_keys) == size


@pytest.mark.django_db
def test_a_revoked_key_is_not_cached(caller):
    api_key_revoke(key=AgentApiKey.objects.get(agent=caller.agent))
    for _ in range(2):
        assert agent_for_api_key(caller.raw_key).error.code == "credentials_revoked"
    assert verified_keys.get(hash_api_key(caller.raw_key)) is None


@pytest.mark.django_db
def test_the_cache_is_bounded():
    cache = VerifiedKeyCache(max_entries=2)
    keys = []
    for _ in range(3):
        agent = AgentFactory()
        issued = api_key_issue(agent=agent)
        key = AgentApiKey.objects.select_related("agent__company").get(agent=agent)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT concat_ws(',', k.ctid, k.xmin, a.ctid, a.xmin, c.ctid, c.xmin) "
                "FROM persistence_agentapikey k JOIN persistence_agent a ON a.id = k.agent_id "
                "JOIN persistence_company c ON c.id = a.company_id WHERE k.id = %s",
                [key.pk],
            )
            (versions,) = cursor.fetchone()
        digest = hash_api_key(issued.raw_key)
        cache.put(digest, key, versions)
        keys.append((digest, key))
    assert len(cache) == 2
    assert cache.get(keys[0][0]) is None  # the oldest went
    assert cache.get(keys[2][0]).agent.pk == keys[2][1].agent.pk
    with pytest.raises(ValueError):
        VerifiedKeyCache(max_entries=-1)
