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


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _area(rows: int, *, required: bool = True) -> forms.Textarea:
    # ``required`` only helps the browser; the service validates every field.
    return forms.Textarea(attrs={"rows": rows, "required": required})


class OrgSkillAddForm(forms.Form):
    """A person's org skill, field by field. It only collects the text (steps and avoid: one
    a line); ``operator_skill_publish`` validates it and its ``invalid_skill`` errors are put
    back on these fields (:meth:`add_service_errors`)."""

    discovery = forms.CharField(
        label="Summary", required=False, widget=_area(2), help_text="What the skill is."
    )
    condition = forms.CharField(
        label="When", required=False, widget=_area(2), help_text="When it applies."
    )
    action = forms.CharField(label="Do", required=False, widget=_area(2), help_text="What to do.")
    rationale = forms.CharField(label="Why", required=False, widget=_area(2))
    steps = forms.CharField(required=False, widget=_area(4), help_text="One per line.")
    avoid = forms.CharField(
        required=False,
        widget=_area(2, required=False),
        help_text="Optional: actions not to take, one per line.",
    )
    task_type = forms.CharField(
        label="Task type", required=False, help_text="Optional: applies to this task type only."
    )
    error_category = forms.CharField(
        label="Error category", required=False, help_text="Optional: … this error category only."
    )
    tool = forms.CharField(required=False, help_text="Optional: … this failing tool only.")
    name = forms.CharField(
        required=False, help_text="Optional: a-z, 0-9 and '-', at most 64; empty: from the summary."
    )

    def skill_data(self) -> dict:
        """The service's input (call after ``is_valid``)."""
        data = {name: self.cleaned_data.get(name) or "" for name in self.fields}
        data["steps"] = _lines(data["steps"])
        data["avoid"] = _lines(data["avoid"])
        return data

    def add_service_errors(self, errors: list) -> None:
        """Each error of the service's ``invalid_skill`` next to its field (``steps.2``: the
        third line of steps); one naming no field of the form above the form."""
        for error in errors:
            path = str(error.get("field") or "").split(".")
            field = path[0] if path[0] in self.fields else None
            line = f"line {int(path[1]) + 1}: " if field and path[1:2] and path[1].isdigit() else ""
            self.add_error(field, line + str(error.get("message", "")))
