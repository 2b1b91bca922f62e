"""Org-memory fixtures: principals of each kind and a human admin client."""

from __future__ import annotations

import pytest

from persistence.principal import Principal
from tests.conftest import make_agent_caller
from tests.persistence.factories import MembershipFactory


@pytest.fixture(autouse=True)
def _no_embeddings_by_default(settings):
    """Most tests need BM25 only; ``with_embeddings`` turns the real model on."""
    settings.ORGMEMORY_EMBEDDINGS = False


@pytest.fixture
def with_embeddings(settings, _no_embeddings_by_default):
    settings.ORGMEMORY_EMBEDDINGS = True


@pytest.fixture
def human(company):
    """A human operator (membership role admin) of ``company`` and their principal."""
    membership = MembershipFactory(company=company, role="admin", user__password=None)
    return Principal.for_human(membership.user, company, membership.role)


@pytest.fixture
def senior(company):
    return make_agent_caller(company=company, seniority="senior")


@pytest.fixture
def junior(company):
    return make_agent_caller(company=company, seniority="junior")


@pytest.fixture
def allow_flush_of_append_only_tables(transactional_db):
    """``transaction=True`` tests that write append-only tables.

    The post-test flush runs as the owner role and empties append-only tables itself
    (``synthorg/management/commands/flush.py``); the app role could not.
    """
    yield


@pytest.fixture
def human_client(company):
    """As the root fixture, without the slow password hashing (force_login needs none)."""
    from rest_framework.test import APIClient

    membership = MembershipFactory(company=company, role="admin", user__password=None)
    client = APIClient()
    client.force_login(membership.user)
    client.membership = membership
    return client
