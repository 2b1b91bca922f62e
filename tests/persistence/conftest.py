"""Fixtures for operational-data tests: people of each role, another company's people."""

import pytest
from rest_framework.test import APIClient

from tests.persistence.factories import MembershipFactory


def make_human_client(company, role: str) -> APIClient:
    membership = MembershipFactory(company=company, role=role)
    client = APIClient()
    client.force_login(membership.user)
    client.membership = membership
    return client


@pytest.fixture
def viewer_client(company):
    return make_human_client(company, "viewer")


@pytest.fixture
def operator_client(company):
    return make_human_client(company, "operator")


@pytest.fixture
def outsider_human(outsider):
    """An admin of the outsider's company."""
    return make_human_client(outsider.company, "admin")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Factories set real passwords; the production hasher would dominate these tests."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
