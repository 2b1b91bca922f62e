"""Forms of the agents pages: they validate what a human typed; the services write."""

from __future__ import annotations

from datetime import datetime, time, timedelta

from django import forms
from django.utils import timezone

from memory.core.models.memory import validate_subject_field
from persistence.models import Agent, AgentApiKey
from persistence.services.erasure import REASON_MAX_CHARS
from synthorg.subjects import SUBJECT_MAX_CHARS

KEY_NAME_REQUIRED = (
    "Name the key after where it is used (e.g. 'ci-runner'), so it can be told apart."
)


class KeyCreateForm(forms.Form):
    name = forms.CharField(
        max_length=AgentApiKey._meta.get_field("name").max_length,
        error_messages={"required": KEY_NAME_REQUIRED},
        help_text="Where the key is used, e.g. “ci-runner”.",
    )
    expires_on = forms.DateField(
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="The key works until the end of this day (server time); blank: never expires.",
    )

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError(KEY_NAME_REQUIRED, code="required")
        return name

    def expires_at(self) -> datetime | None:
        """The end of the chosen day in the server's time zone (the service refuses a past one)."""
        day = self.cleaned_data.get("expires_on")
        if day is None:
            return None
        return datetime.combine(
            day + timedelta(days=1), time.min, tzinfo=timezone.get_current_timezone()
        )


def _model_choices(field: str) -> list[tuple[str, str]]:
    return list(Agent._meta.get_field(field).choices)


class AgentProfileForm(forms.Form):
    """What an admin changes on the agent page; ``agent_update`` validates and audits it."""

    role = forms.CharField(max_length=200, required=False)
    department = forms.CharField(max_length=200, required=False)
    seniority = forms.ChoiceField(choices=_model_choices("seniority"))
    autonomy_level = forms.ChoiceField(choices=_model_choices("autonomy_level"), label="Autonomy")
    memory_level = forms.ChoiceField(
        choices=_model_choices("memory_level"),
        help_text="persistent: kept; project: purged with the project; session: per session; "
        "none: nothing is stored.",
    )
    is_active = forms.BooleanField(required=False, label="Active")

    @classmethod
    def for_agent(cls, agent: Agent) -> AgentProfileForm:
        return cls(initial={name: getattr(agent, name) for name in cls.base_fields})


class SubjectEraseForm(forms.Form):
    """Erase one end user across every agent (``persistence.services.erasure.subject_erase``)."""

    subject = forms.CharField(
        max_length=SUBJECT_MAX_CHARS,
        strip=False,
        validators=[validate_subject_field],
        help_text="The end user's id exactly as your application stores it (e.g. user-42).",
    )
    confirm = forms.CharField(
        max_length=SUBJECT_MAX_CHARS,
        strip=False,
        help_text="Type the id again: the erasure cannot be undone.",
    )
    reason = forms.CharField(
        max_length=REASON_MAX_CHARS,
        required=False,
        help_text="Recorded in the audit entry (e.g. the ticket of the request).",
    )

    def clean(self):
        data = super().clean()
        if data.get("subject") and data.get("confirm") != data.get("subject"):
            self.add_error("confirm", "The two ids differ; nothing was erased.")
        return data
