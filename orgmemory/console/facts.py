"""Console org facts: the company's live facts by category, a page at a time, and one
fact's version history. Read-only for every role; facts are written through the admin, the
API and (core policies) the policies page."""

from __future__ import annotations

from django import forms
from django.http import Http404
from django.shortcuts import render

from orgmemory.models import OrgFact
from orgmemory.selectors.facts import fact_history
from persistence.console.access import ConsoleUser, console_view
from synthorg.enums import OrgFactCategory
from synthorg.errors import NotFoundError

PAGE = 50
MAX_PAGE = 10_000


class FactFilterForm(forms.Form):
    category = forms.ChoiceField(
        choices=[("", "all categories")] + [(c.value, c.value) for c in OrgFactCategory],
        required=False,
    )
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_PAGE)


@console_view
def facts_view(request, user: ConsoleUser):
    """One page of live facts (newest change first); a bad filter is a form error (400)."""
    form = FactFilterForm(request.GET)
    if not form.is_valid():
        return render(
            request,
            "console/facts/list.html",
            {"section": "facts", "form": form, "facts": [], "page": 1},
            status=400,
        )
    category = form.cleaned_data["category"]
    page = form.cleaned_data["page"] or 1
    query = OrgFact.objects.filter(company=user.company, retracted_at__isnull=True)
    if category:
        query = query.filter(category=category)
    # One row past the page tells whether there is a next one, without counting them all.
    start = (page - 1) * PAGE
    rows = list(query.order_by("-updated_at", "fact_id")[start : start + PAGE + 1])
    if page > 1 and not rows:
        raise Http404("No such page.")
    return render(
        request,
        "console/facts/list.html",
        {
            "section": "facts",
            "form": form,
            "facts": rows[:PAGE],
            "page": page,
            "has_next": len(rows) > PAGE,
            "category": category,
        },
    )


@console_view
def fact_view(request, user: ConsoleUser, fact_id):
    try:
        rows = fact_history(company=user.company, fact_id=fact_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from exc
    fact = OrgFact.objects.get(company=user.company, pk=fact_id)
    return render(
        request, "console/facts/fact.html", {"section": "facts", "fact": fact, "rows": rows}
    )
