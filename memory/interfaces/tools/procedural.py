"""``report_execution``: an agent reports a task outcome, from which procedural lessons are
learned (the procedural app's own submit service; the same answer as ``POST
/api/v1/executions``)."""

from __future__ import annotations

from memory.interfaces.service import MemoryService
from memory.procedural.domain import ExecutionReportInput
from synthorg.errors import AccessDeniedError
from synthorg.tools import ToolArguments, ToolContext, ToolResult, ToolSpec

AGENTS_ONLY = "Only agents report executions."


class ReportExecutionArgs(ToolArguments, ExecutionReportInput):
    """The execution report's own fields (outcome, error, tool calls, counts ...)."""


def report_execution(ctx: ToolContext, args: ReportExecutionArgs) -> ToolResult:
    if not ctx.principal.is_agent:
        raise AccessDeniedError(AGENTS_ONLY, code="agents_only")
    submitted = MemoryService(ctx.principal).report_execution(
        args.model_dump(exclude_defaults=True)
    )
    return ToolResult(
        f"Execution report {submitted.report.pk} stored; lesson capture: {submitted.capture}.",
        {"id": str(submitted.report.pk), "capture": submitted.capture},
    )


PROCEDURAL_TOOLS = (
    ToolSpec(
        "report_execution",
        "Report how a task went (outcome, error, the tools you called, retries) so that "
        "lessons are learned from it. Secrets in the text are redacted on the way in.",
        ReportExecutionArgs,
        report_execution,
        group="procedural",
    ),
)
