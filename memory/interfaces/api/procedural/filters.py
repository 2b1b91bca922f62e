import django_filters as df

from memory.procedural.models import ExecutionCapture, ExecutionReport
from synthorg.api.fields import UtcDateTimeFilter


class ExecutionReportFilter(df.FilterSet):
    outcome = df.ChoiceFilter(choices=ExecutionReport.Outcome.choices)
    agent = df.NumberFilter(field_name="agent_id", label="Agent id")
    task = df.NumberFilter(field_name="task_id", label="Task id")
    capture_status = df.ChoiceFilter(
        field_name="capture__status", choices=ExecutionCapture.Status.choices
    )
    since = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte", label="From")
    until = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt", label="To")

    class Meta:
        model = ExecutionReport
        fields = ("outcome",)


# ``from``/``to`` are Python keywords: rename the declared filters.
ExecutionReportFilter.base_filters["from"] = ExecutionReportFilter.base_filters.pop("since")
ExecutionReportFilter.base_filters["to"] = ExecutionReportFilter.base_filters.pop("until")
