"""Who is using the console: the logged-in user, the company they act in, their role.

The company is the one picked with the switcher (kept in the session), else the user's
first by name. A user without a membership sees a 403 page (a superuser: a 200 page saying how
to become a member); another company's slug is 404.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from persistence.access import ROLE_RANK
from persistence.models import Company, CompanyMembership
from persistence.principal import Principal

SESSION_KEY = "console_company"


@dataclass(frozen=True)
class ConsoleUser:
    membership: CompanyMembership
    companies: list[Company]

    @property
    def company(self) -> Company:
        return self.membership.company

    @property
    def role(self) -> str:
        return self.membership.role

    @property
    def principal(self) -> Principal:
        return Principal.for_human(self.membership.user, self.company, self.role)

    @property
    def can_decide(self) -> bool:
        """Operators and above decide approvals and change memories; viewers only read."""
        return ROLE_RANK.get(self.role, -1) >= ROLE_RANK["operator"]

    @property
    def can_administer(self) -> bool:
        """Admins and owners manage agents and their keys; operators and viewers read."""
        return ROLE_RANK.get(self.role, -1) >= ROLE_RANK["admin"]


def console_user(request) -> ConsoleUser | None:
    memberships = list(
        CompanyMembership.objects.select_related("company", "user")
        .filter(user=request.user)
        .order_by("company__name")
    )
    if not memberships:
        return None
    # The session holds the company's id, not its slug: a renamed slug taken by another
    # company must not switch a member of both to it.
    chosen_id = request.session.get(SESSION_KEY)
    chosen = next((m for m in memberships if m.company_id == chosen_id), memberships[0])
    return ConsoleUser(membership=chosen, companies=[m.company for m in memberships])


def select_company(request, slug: str) -> Company:
    membership = (
        CompanyMembership.objects.select_related("company")
        .filter(user=request.user, company__slug=slug)
        .first()
    )
    if membership is None:
        raise Http404("No such company among yours.")
    request.session[SESSION_KEY] = membership.company_id
    return membership.company


def console_view(view):
    """Login required; passes the :class:`ConsoleUser`; 403 page without a membership."""

    @login_required(login_url="console:login")
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        user = console_user(request)
        if user is None:
            # A superuser is not forbidden anything: they get the explanation with 200.
            superuser = request.user.is_superuser
            return render(
                request,
                "console/no_company.html",
                {"superuser": superuser},
                status=200 if superuser else 403,
            )
        request.console = user
        return view(request, user, *args, **kwargs)

    return wrapper
