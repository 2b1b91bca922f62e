"""Nobody grants, changes or removes a membership at or above their own role; owners manage
every role, and so do superusers (issue 34: a company admin made itself owner, demoted the
owner to viewer and deleted the owner's membership through the admin's membership pages).

The rule lives in one place (``persistence.access.require_membership_change``, called by
``membership_set`` / ``membership_remove``); the admin is the interface that writes
memberships (the console and the API have no membership write route)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from persistence.models import AuditEntry, CompanyMembership
from persistence.principal import Principal
from persistence.services.companies import membership_remove, membership_set
from synthorg.errors import AccessDeniedError
from tests.persistence.factories import CompanyFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

ROLES = ("viewer", "operator", "admin", "owner")
RANK = {role: rank for rank, role in enumerate(ROLES)}


def _actor(company, role, *, superuser=False):
    user = UserFactory(password=None, is_staff=True, is_superuser=superuser)
    MembershipFactory(company=company, user=user, role=role)
    return Principal.for_human(user, company, role)


@pytest.mark.parametrize("actor_role", ["operator", "admin", "owner"])
@pytest.mark.parametrize("current", [None, *ROLES])
@pytest.mark.parametrize("new", [*ROLES, None])
def test_the_rule_for_every_role_change(actor_role, current, new):
    company = CompanyFactory()
    actor = _actor(company, actor_role)
    target = UserFactory(password=None)
    if current is not None:
        MembershipFactory(company=company, user=target, role=current)
    if new is None and current is None:
        return
    allowed = actor_role == "owner" or (
        actor_role == "admin"
        and all(RANK[r] < RANK["admin"] for r in (current, new) if r is not None)
    )
    audits = AuditEntry.objects.filter(action_type__startswith="membership.").count()

    def change():
        if new is None:
            membership = CompanyMembership.objects.get(company=company, user=target)
            membership_remove(membership=membership, principal=actor)
        else:
            membership_set(company=company, user=target, role=new, principal=actor)

    if allowed:
        change()
        stored = CompanyMembership.objects.filter(company=company, user=target)
        assert list(stored.values_list("role", flat=True)) == ([new] if new else [])
        return
    with pytest.raises(AccessDeniedError) as refused:
        change()
    expected = "role_insufficient" if actor_role == "operator" else "membership_role_too_high"
    assert refused.value.code == expected
    stored = CompanyMembership.objects.filter(company=company, user=target)
    assert list(stored.values_list("role", flat=True)) == ([current] if current else [])
    assert AuditEntry.objects.filter(action_type__startswith="membership.").count() == audits


def test_an_admin_cannot_raise_itself():
    company = CompanyFactory()
    actor = _actor(company, "admin")
    for role in ("admin", "owner", "operator"):  # its own membership is at its own role
        with pytest.raises(AccessDeniedError):
            membership_set(company=company, user=actor.user, role=role, principal=actor)
    assert CompanyMembership.objects.get(user=actor.user).role == "admin"


def test_a_superuser_acting_with_an_admin_membership_manages_owners():
    company = CompanyFactory()
    owner = MembershipFactory(company=company, role="owner")
    root = _actor(company, "admin", superuser=True)
    membership_set(company=company, user=owner.user, role="viewer", principal=root)
    assert CompanyMembership.objects.get(pk=owner.pk).role == "viewer"


def _staff_client(company, role, *, superuser=False):
    user = UserFactory(password=None, is_staff=True, is_superuser=superuser)
    MembershipFactory(company=company, user=user, role=role)
    user.user_permissions.set(Permission.objects.filter(codename__endswith="companymembership"))
    client = Client()
    client.force_login(user)
    return user, client


PAGES = "/admin/persistence/companymembership"


def test_an_admin_in_the_django_admin_cannot_touch_the_owner_or_raise_itself():
    company = CompanyFactory()
    owner = MembershipFactory(company=company, role="owner")
    user, client = _staff_client(company, "admin")
    mine = CompanyMembership.objects.get(user=user)

    demoted = client.post(f"{PAGES}/{owner.pk}/change/", {"role": "viewer"}, follow=True)
    assert "may only grant, change or remove memberships below it" in demoted.content.decode()
    raised = client.post(f"{PAGES}/{mine.pk}/change/", {"role": "owner"}, follow=True)
    assert "may only grant, change or remove memberships below it" in raised.content.decode()
    client.post(f"{PAGES}/{owner.pk}/delete/", {"post": "yes"}, follow=True)
    client.post(
        f"{PAGES}/",
        {"action": "delete_selected", "_selected_action": [owner.pk], "post": "yes"},
        follow=True,
    )
    newcomer = UserFactory(password=None)
    MembershipFactory(company=CompanyFactory(), user=newcomer)  # offered to pick from
    MembershipFactory(company=company, user=newcomer, role="viewer")
    granted = client.post(
        f"{PAGES}/{CompanyMembership.objects.get(company=company, user=newcomer).pk}/change/",
        {"role": "admin"},
        follow=True,
    )
    assert "may only grant, change or remove memberships below it" in granted.content.decode()

    assert dict(CompanyMembership.objects.filter(company=company).values_list("user", "role")) == {
        owner.user_id: "owner",
        user.pk: "admin",
        newcomer.pk: "viewer",
    }
    assert not AuditEntry.objects.filter(action_type__startswith="membership.").exists()


def test_an_admin_in_the_django_admin_manages_roles_below_its_own():
    company = CompanyFactory()
    operator = MembershipFactory(company=company, role="operator")
    _user, client = _staff_client(company, "admin")
    client.post(f"{PAGES}/{operator.pk}/change/", {"role": "viewer"}, follow=True)
    assert CompanyMembership.objects.get(pk=operator.pk).role == "viewer"
    client.post(f"{PAGES}/{operator.pk}/delete/", {"post": "yes"}, follow=True)
    assert not CompanyMembership.objects.filter(pk=operator.pk).exists()
    assert list(
        AuditEntry.objects.filter(action_type__startswith="membership.")
        .order_by("id")
        .values_list("action_type", flat=True)
    ) == ["membership.changed", "membership.removed"]


def test_an_owner_in_the_django_admin_manages_owners():
    company = CompanyFactory()
    other_owner = MembershipFactory(company=company, role="owner")
    _user, client = _staff_client(company, "owner")
    client.post(f"{PAGES}/{other_owner.pk}/change/", {"role": "admin"}, follow=True)
    assert CompanyMembership.objects.get(pk=other_owner.pk).role == "admin"
