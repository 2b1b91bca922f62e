"""The fine-tune tools an agent may call: read-only.

Tool callers (the tool-call endpoint, MCP over HTTP and stdio) are agents, authenticated by
their API key. Starting a run, preflight, the run list with its settings and pair counts,
cancel, rollback and checkpoint deletion are for the company's admins, who are humans
(``/api/v1/memory/fine-tune/…`` and the console's fine-tune page); an agent may not write
``fine_tune`` (persistence.access), so no destructive fine-tune tool is offered. What an
agent may see: the state of a run with the gate's figures, and which embedder and adapter
rank its searches. Guide: docs/operating/fine-tune.md.
"""

from __future__ import annotations

from uuid import UUID

from pydantic import Field

from memory.finetune import selectors
from memory.finetune.api.serializers import (
    ActiveEmbedderSerializer,
    AgentFineTuneRunSerializer,
)
from memory.finetune.services import NO_SUCH_RUN, RUN_NOT_FOUND
from memory.interfaces.tools.toolkit import service_for
from synthorg.errors import NotFoundError
from synthorg.tools import ToolArguments, ToolContext, ToolResult, ToolSpec, json_ready

NO_RUN = "No fine-tune run yet: searches use the base embedder."


class FineTuneStatusArgs(ToolArguments):
    run_id: UUID | None = Field(
        default=None, description="A run's id; default: the company's newest run."
    )


class ActiveEmbedderArgs(ToolArguments):
    """No arguments: the calling agent's company."""


def _status_text(run: dict) -> str:
    text = (
        f"Fine-tune run {run['id']}: {run['status']} "
        f"({run['epochs_done']}/{run['epochs_total']} epochs)."
    )
    gate = run["gate"]
    if gate is not None:
        text += (
            f" Held-out nDCG@10 {gate['before']['ndcg@10']:.3f} -> "
            f"{gate['after']['ndcg@10']:.3f} (gain {gate['ndcg_gain']:+.3f}, "
            f"margin {gate['min_gain']})."
        )
    if run["checkpoint"] is not None:
        text += f" Adapter {run['checkpoint']}."
    return text


def get_fine_tune_status(ctx: ToolContext, args: FineTuneStatusArgs) -> ToolResult:
    """The company's run ``run_id`` (404 ``fine_tune_run_not_found``), or its newest run."""
    company = service_for(ctx).company  # agents only, as every memory tool
    if args.run_id is None:
        run = selectors.fine_tune_latest_run(company)
    else:
        run = selectors.fine_tune_run_get(company, args.run_id)
        if run is None:
            raise NotFoundError(NO_SUCH_RUN, code=RUN_NOT_FOUND)
    if run is None:
        return ToolResult(NO_RUN, {"run": None})
    data = json_ready(AgentFineTuneRunSerializer(run).data)
    return ToolResult(_status_text(data), {"run": data})


def get_active_embedder(ctx: ToolContext, args: ActiveEmbedderArgs) -> ToolResult:
    active = selectors.active_embedder(service_for(ctx).company)
    data = json_ready(ActiveEmbedderSerializer(active.as_dict()).data)
    text = f"Searches embed queries with {active.embedder_id} ({active.dims} dims)"
    if active.applied:
        text += f" through the company's adapter {active.checkpoint}."
    elif active.checkpoint is not None:
        text += f"; adapter {active.checkpoint} is active but not applied (fine-tuning is off)."
    else:
        text += ", no adapter."
    return ToolResult(text, data)


FINE_TUNE_TOOLS = (
    ToolSpec(
        "get_fine_tune_status",
        "Read the state of your company's retrieval fine-tune (a query adapter trained on "
        "its memories): a run's status, progress and, once evaluated, recall@10 / nDCG@10 "
        "before and after on held-out pairs with the gain it needed. Read-only; runs are "
        "started and rolled back by the company's admins.",
        FineTuneStatusArgs,
        get_fine_tune_status,
        group="fine_tune",
    ),
    ToolSpec(
        "get_active_embedder",
        "Which embedder and which fine-tuned adapter (if any) rank your memory searches.",
        ActiveEmbedderArgs,
        get_active_embedder,
        group="fine_tune",
    ),
)
