"""The inbox's filter form: every query-string value is validated, so a bad one is a form
error on the page (400), never a 500 and never silently ignored."""

from __future__ import annotations

from datetime import datetime, time, timedelta

from django import forms
from django.utils import timezone

from orgmemory.inbox import (
    KIND_APPROVAL,
    KIND_WRITE_REQUEST,
    RISKS,
    SORT_EXPIRY,
    SORT_NEWEST,
    SORT_OLDEST,
    SORT_RISK,
    STATUSES,
    InboxFilters,
)
from persistence.models import Agent

ALL = "all"
KIND_CHOICES = [
    ("", "all kinds"),
    (KIND_APPROVAL, "Approval items"),
    (KIND_WRITE_REQUEST, "Org write requests"),
]
SORT_CHOICES = [
    (SORT_EXPIRY, "closest to expiry, then riskiest"),
    (SORT_RISK, "riskiest, then closest to expiry"),
    (SORT_NEWEST, "newest first"),
    (SORT_OLDEST, "oldest first"),
]
MAX_PAGE = 10_000
RANGE_ORDER = "“{start}” must be on or before “{end}”."


class InboxFilterForm(forms.Form):
    status = forms.ChoiceField(
        choices=[(s, s) for s in STATUSES] + [(ALL, ALL)], required=False, initial="pending"
    )
    kind = forms.ChoiceField(choices=KIND_CHOICES, required=False)
    risk = forms.ChoiceField(choices=[("", "any risk")] + [(r, r) for r in RISKS], required=False)
    action_type = forms.ChoiceField(required=False)
    agent = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    created_after = forms.DateField(required=False, label="Created from")
    created_before = forms.DateField(required=False, label="Created to")
    expires_after = forms.DateField(required=False, label="Expires from")
    expires_before = forms.DateField(required=False, label="Expires to")
    sort = forms.ChoiceField(choices=SORT_CHOICES, required=False, initial=SORT_EXPIRY)
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_PAGE)

    def __init__(self, data, *, action_types: list[str], company):
        super().__init__(data)
        self.fields["action_type"].choices = [("", "any action")] + [(a, a) for a in action_types]
        agents = Agent.objects.filter(company=company).order_by("name").values_list("pk", "name")
        self.fields["agent"].choices = [("", "any agent")] + [(pk, name) for pk, name in agents]
        for name in ("created_after", "created_before", "expires_after", "expires_before"):
            self.fields[name].widget = forms.DateInput(attrs={"type": "date"})

    def clean(self):
        cleaned = super().clean()
        for start, end in (
            ("created_after", "created_before"),
            ("expires_after", "expires_before"),
        ):
            if cleaned.get(start) and cleaned.get(end) and cleaned[start] > cleaned[end]:
                self.add_error(
                    end,
                    RANGE_ORDER.format(start=self.fields[start].label, end=self.fields[end].label),
                )
        return cleaned

    def filters(self) -> InboxFilters:
        """The validated filters; date ranges are whole days in the current time zone (the
        "to" day included)."""
        data = self.cleaned_data
        status = data.get("status") or "pending"
        return InboxFilters(
            status=None if status == ALL else status,
            kind=data.get("kind") or None,
            risk_level=data.get("risk") or None,
            action_type=data.get("action_type") or None,
            agent_id=data.get("agent"),
            created_after=_day_start(data.get("created_after")),
            created_before=_day_start(data.get("created_before"), plus_days=1),
            expires_after=_day_start(data.get("expires_after")),
            expires_before=_day_start(data.get("expires_before"), plus_days=1),
            sort=data.get("sort") or SORT_EXPIRY,
        )

    def page_number(self) -> int:
        return self.cleaned_data.get("page") or 1


def _day_start(day, *, plus_days: int = 0) -> datetime | None:
    if day is None:
        return None
    start = datetime.combine(day + timedelta(days=plus_days), time.min)
    return timezone.make_aware(start, timezone.get_current_timezone())
