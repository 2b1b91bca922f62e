"""Shell pages: login/logout, home, company switcher."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from persistence.console.access import console_view, select_company


class ConsoleLoginView(auth_views.LoginView):
    template_name = "console/login.html"
    redirect_authenticated_user = True

    def get_default_redirect_url(self):
        return "/console/"


@console_view
def home(request, user):
    return redirect("approvals_console:inbox")


@require_POST
@console_view
def switch_company(request, user):
    select_company(request, request.POST.get("company", ""))
    target = request.POST.get("next") or "/console/"
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "/console/"
    return redirect(target)
