"""``GET /``: where the admin's "View site" link and a bare host name lead.

A short page pointing at what a person or a client can use here. Links to pages other apps
mount (such as an operator console) appear only when their URL resolves.
"""

from __future__ import annotations

from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.views.decorators.http import require_GET

_OPTIONAL_PAGES = (("/console/", "Operator console", "approvals, memories and agents"),)


def _resolves(path: str) -> bool:
    try:
        resolve(path)
    except Resolver404:
        return False
    return True


@require_GET
def landing(request):
    optional = [
        {"url": url, "title": title, "what": what}
        for url, title, what in _OPTIONAL_PAGES
        if _resolves(url)
    ]
    return render(request, "landing.html", {"optional_pages": optional})
