"""``/api/v1/memory/fine-tune/…``: the company's query-adapter fine-tune, for its admins.

Thin: validate the body, call the service (memory.finetune.services) with the session's
principal, serialise. Cancel, rollback and checkpoint deletion take the guardrail triple (the
human, ``confirm: true``, a non-blank ``reason``). Guide: docs/operating/fine-tune.md.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.finetune import selectors as selectors
from memory.finetune import services as services
from memory.finetune.api import serializers as s
from persistence.access import ADMIN, ROLE_RANK
from persistence.api.permissions import IsHuman, IsPrincipal
from synthorg.api.schema import PROBLEM
from synthorg.errors import InvalidInputError, NotFoundError
from synthorg.tools import require_confirmation

PAGE_MAX = 100


class IsCompanyAdmin(BasePermission):
    message = "Fine-tuning is for the company's admins (role admin or owner)."
    code = "role_insufficient"

    def has_permission(self, request, view) -> bool:
        return ROLE_RANK.get(request.user.role, -1) >= ROLE_RANK[ADMIN]


class FineTuneView(APIView):
    permission_classes = [IsPrincipal, IsHuman, IsCompanyAdmin]

    @property
    def principal(self):
        return self.request.user

    @property
    def company(self):
        return self.request.user.company

    def confirmation(self, data):
        return require_confirmation(
            confirm=data.get("confirm"), reason=data.get("reason", ""), via="api"
        )


def _plan(request) -> services.FineTunePlan:
    body = s.PlanSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    return services.FineTunePlan(method=body.validated_data["method"])


ERRORS = {400: PROBLEM, 403: PROBLEM, 404: PROBLEM, 409: PROBLEM, 422: PROBLEM, 501: PROBLEM}


@extend_schema(tags=["fine-tune"])
class PreflightView(FineTuneView):
    @extend_schema(
        summary="Check whether a fine-tune run could start",
        description="Config, base model, checkpoint directory and training pairs; nothing starts.",
        request=s.PlanSerializer,
        responses={200: s.PreflightSerializer, **ERRORS},
    )
    def post(self, request):
        preflight = services.fine_tune_preflight(company=self.company, plan=_plan(request))
        return Response(s.PreflightSerializer(preflight.as_dict()).data)


@extend_schema(tags=["fine-tune"])
class RunCollectionView(FineTuneView):
    @extend_schema(
        operation_id="fine_tune_runs_list",
        summary="Fine-tune runs, newest first",
        parameters=[
            OpenApiParameter("limit", int, description=f"At most {PAGE_MAX} (default 20)."),
            OpenApiParameter("offset", int, description="Runs to skip."),
        ],
        responses={200: s.FineTuneRunPageSerializer, **ERRORS},
    )
    def get(self, request):
        limit = _int_param(request, "limit", 20, 1, PAGE_MAX)
        offset = _int_param(request, "offset", 0, 0, 10**9)
        runs = selectors.fine_tune_runs(self.company).select_related("checkpoint")
        page = {"count": runs.count(), "results": list(runs[offset : offset + limit])}
        return Response(s.FineTuneRunPageSerializer(page).data)

    @extend_schema(
        summary="Start a fine-tune run",
        description=(
            "Preflight, then a `planned` run whose training is queued (q2). The adapter is "
            "activated only when its held-out nDCG@10 gain reaches `memory.fine_tune.min_gain`."
        ),
        request=s.PlanSerializer,
        responses={202: s.FineTuneRunSerializer, **ERRORS},
    )
    def post(self, request):
        run = services.fine_tune_start(
            company=self.company, plan=_plan(request), principal=self.principal
        )
        return Response(s.FineTuneRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


def _int_param(request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise InvalidInputError(
            f"{name} must be an integer between {low} and {high}.", code="invalid_parameter"
        )
    return value


def _run_or_404(company, pk):
    run = selectors.fine_tune_run_get(company, pk)
    if run is None:
        raise NotFoundError(services.NO_SUCH_RUN, code=services.RUN_NOT_FOUND)
    return run


@extend_schema(tags=["fine-tune"])
class RunDetailView(FineTuneView):
    @extend_schema(
        summary="A fine-tune run's status, progress and figures",
        responses={200: s.FineTuneRunSerializer, **ERRORS},
    )
    def get(self, request, pk):
        return Response(s.FineTuneRunSerializer(_run_or_404(self.company, pk)).data)


@extend_schema(tags=["fine-tune"])
class RunResumeView(FineTuneView):
    @extend_schema(
        summary="Resume a failed, cancelled or crashed run from its last saved epoch",
        request=None,
        responses={202: s.FineTuneRunSerializer, **ERRORS},
    )
    def post(self, request, pk):
        s.Serializer(data=request.data or {}).is_valid(raise_exception=True)
        services.fine_tune_resume(company=self.company, run_id=pk, principal=self.principal)
        run = _run_or_404(self.company, pk)
        return Response(s.FineTuneRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["fine-tune"])
class RunCancelView(FineTuneView):
    @extend_schema(
        summary="Cancel a planned or running run (destructive: confirm and reason)",
        request=s.GuardrailSerializer,
        responses={200: s.FineTuneRunSerializer, **ERRORS},
    )
    def post(self, request, pk):
        body = s.GuardrailSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.fine_tune_cancel(
            company=self.company, run_id=pk, principal=self.principal,
            confirmation=self.confirmation(body.validated_data),
        )  # fmt: skip
        return Response(s.FineTuneRunSerializer(_run_or_404(self.company, pk)).data)


@extend_schema(tags=["fine-tune"])
class CheckpointCollectionView(FineTuneView):
    @extend_schema(
        summary="The company's adapter checkpoints, newest first",
        responses={200: s.AdapterCheckpointSerializer(many=True), **ERRORS},
    )
    def get(self, request):
        checkpoints = selectors.adapter_checkpoints(self.company)[:PAGE_MAX]
        return Response(s.AdapterCheckpointSerializer(checkpoints, many=True).data)


@extend_schema(tags=["fine-tune"])
class CheckpointDetailView(FineTuneView):
    @extend_schema(
        summary="Delete an inactive checkpoint and its file (destructive: confirm and reason)",
        request=s.GuardrailSerializer,
        responses={204: None, **ERRORS},
    )
    def delete(self, request, pk):
        body = s.GuardrailSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.adapter_checkpoint_delete(
            company=self.company, checkpoint_id=pk, principal=self.principal,
            confirmation=self.confirmation(body.validated_data),
        )  # fmt: skip
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(tags=["fine-tune"])
class RollbackView(FineTuneView):
    @extend_schema(
        summary="Make a checkpoint (or the base model) what search uses, atomically",
        request=s.RollbackSerializer,
        responses={200: s.ActiveEmbedderSerializer, **ERRORS},
    )
    def post(self, request):
        body = s.RollbackSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.adapter_rollback(
            company=self.company, checkpoint_id=body.validated_data["checkpoint"],
            principal=self.principal, confirmation=self.confirmation(body.validated_data),
        )  # fmt: skip
        return Response(
            s.ActiveEmbedderSerializer(selectors.active_embedder(self.company).as_dict()).data
        )


@extend_schema(tags=["fine-tune"])
class ActiveEmbedderView(FineTuneView):
    @extend_schema(
        summary="The embedder and adapter the company's searches use",
        responses={200: s.ActiveEmbedderSerializer, **ERRORS},
    )
    def get(self, request):
        return Response(
            s.ActiveEmbedderSerializer(selectors.active_embedder(self.company).as_dict()).data
        )
