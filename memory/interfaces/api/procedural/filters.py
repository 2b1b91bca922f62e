import django_filters as df

from memory.core.models.memory import validate_subject_field
from memory.procedural.models import ExecutionCapture, ExecutionReport
from synthorg.api.fields import UtcDateTimeFilter


class ExecutionReportFilter(df.FilterSet):
    outcome = df.ChoiceFilter(choices=ExecutionReport.Outcome.choices)
    agent = df.NumberFilter(field_name="agent_id", label="Agent id")
    task = df.NumberFilter(field_name="task_id", label="Task id")
    capture_status = df.ChoiceFilter(
        field_name="capture__status", choices=ExecutionCapture.Status.choices
    )
    subject = df.CharFilter(
        field_name="subject_link__subject",
        validators=[validate_subject_field],
        strip=False,
        label="Only reports of tasks that served this end user",
    )
    since = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte", label="From")
    until = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt", label="To")

    class Meta:
        model = ExecutionReport
        fields = ("outcome",)


# ``from``/``to`` are Python keywords: rename the declared filters.
ExecutionReportFilter.base_filters["from"] = ExecutionReportFilter.base_filters.pop("since")
ExecutionReportFilter.base_filters["to"] = ExecutionReportFilter.base_filters.pop("until")
