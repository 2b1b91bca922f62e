"""Forms of the console's "what agents see and did" pages: every value validated, so a bad
one is a form error on the page (400), never a 500 and never silently ignored."""

from __future__ import annotations

from django import forms

from memory.core.models import RequestLogEntry
from persistence.models import Agent

DEFAULT_BUDGET = 2000
MAX_BUDGET = 1_000_000
MAX_PAGE = 10_000


def _agent_choices(company, empty: str | None):
    agents = Agent.objects.filter(company=company).order_by("name").values_list("pk", "name")
    head = [("", empty)] if empty is not None else []
    return head + [(pk, name) for pk, name in agents]


class ContextPreviewForm(forms.Form):
    """What ``/memories/context`` takes, plus the agent it is asked for (an id, not a
    choice: another company's agent is a 404 like on every console page, not a form error)."""

    agent = forms.IntegerField(min_value=1, widget=forms.Select)
    query = forms.CharField(label="Task", max_length=2000, strip=True)
    token_budget = forms.IntegerField(
        label="Token budget", min_value=0, max_value=MAX_BUDGET, initial=DEFAULT_BUDGET
    )
    include_org = forms.BooleanField(
        label="Include org knowledge (core policies, extended facts)", required=False
    )

    def __init__(self, data, *, company):
        super().__init__(data)
        self.fields["agent"].widget.choices = _agent_choices(company, empty=None)


class RequestLogFilterForm(forms.Form):
    agent = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    kind = forms.ChoiceField(
        choices=[("", "all calls"), *RequestLogEntry.Kind.choices], required=False
    )
    degraded = forms.BooleanField(label="Degraded only", required=False)
    q = forms.CharField(label="Query contains", max_length=200, required=False, strip=True)
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_PAGE)

    def __init__(self, data, *, company):
        super().__init__(data)
        self.fields["agent"].choices = _agent_choices(company, empty="any agent")
