"""The one human-principal selector used by the API, the admin and the dashboard."""

import pytest
from rest_framework.test import APIClient

from persistence.selectors.identity import human_companies, human_principal
from tests.persistence.factories import CompanyFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_rules():
    one, two, other = CompanyFactory(), CompanyFactory(), CompanyFactory()
    solo = MembershipFactory(company=one, role="viewer").user
    multi = MembershipFactory(company=one, role="admin").user
    MembershipFactory(company=two, user=multi, role="operator")
    root = UserFactory(is_superuser=True, is_staff=True)

    principal = human_principal(solo)
    assert (principal.company, principal.role, principal.can_write) == (one, "viewer", False)
    assert human_principal(multi) is None  # several companies: the caller must name one
    assert human_principal(multi, company_slug=two.slug).role == "operator"
    assert human_principal(multi, company=one).role == "admin"
    assert human_principal(multi, company=other) is None  # not theirs: never revealed
    assert human_principal(multi, company_slug="no-such") is None
    assert human_principal(multi, company_slug="a\x00b") is None
    assert human_principal(root) is None  # no membership, no company named
    assert human_principal(root, company=other).role == "owner"
    solo.is_active = False
    assert human_principal(solo) is None
    assert set(human_companies(multi)) == {one, two}
    assert set(human_companies(multi, writable=True)) == {one, two}
    assert list(human_companies(solo, writable=True)) == []
    assert set(human_companies(root)) == {one, two, other}


def test_api_uses_the_same_rule_for_superusers():
    company = CompanyFactory()
    root = UserFactory(is_superuser=True, is_staff=True)
    client = APIClient()
    client.force_login(root)
    assert client.get("/api/v1/me").status_code == 403
    response = client.get("/api/v1/me", HTTP_X_COMPANY=company.slug)
    assert response.status_code == 200
    assert (response.json()["role"], response.json()["company"]["slug"]) == ("owner", company.slug)
