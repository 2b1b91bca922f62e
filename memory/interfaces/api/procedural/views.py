"""Execution reports: agents submit them (202), agents and humans read them."""

from __future__ import annotations

import json

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.interfaces.api.procedural import serializers as s
from memory.interfaces.api.procedural.filters import ExecutionReportFilter
from memory.interfaces.service import MemoryService
from memory.procedural.models import ExecutionReport
from memory.procedural.selectors import (
    execution_report_get,
    execution_reports_visible_to,
    lesson_for,
)
from memory.procedural.services.lessons import lesson_skill_md
from memory.procedural.services.operator_skills import operator_skill_publish
from memory.procedural.skills import org_skills
from persistence.api.permissions import IsAgent, IsHuman, IsPrincipal
from synthorg.api.pagination import StableCursorPagination
from synthorg.api.schema import PROBLEM
from synthorg.errors import InvalidInputError

BODY_NOT_OBJECT = "The request body must be a JSON object."
APPLIED_TAKES_NO_BODY = "This endpoint takes no request body."

REPORT_EXAMPLE = {
    "task_id": 481,
    "task_title": "Deploy billing service",
    "task_type": "deploy",
    "outcome": "failed",
    "error": {"category": "timeout", "message": "helm upgrade timed out after 300s"},
    "tool_calls": [
        {"name": "helm_upgrade", "status": "failed", "error": "timeout", "duration_ms": 300000}
    ],
    "retry_count": 2,
    "turn_count": 9,
    "duration_ms": 312000,
    "recovery": "Retried twice with the same timeout.",
}


class ExecutionReportPagination(StableCursorPagination):
    ordering = ("-created_at", "-id")


@extend_schema(tags=["executions"])
class ExecutionReportCollectionView(generics.ListAPIView):
    serializer_class = s.ExecutionReportSerializer
    queryset = ExecutionReport.objects.none()  # for the schema; requests use get_queryset()
    filterset_class = ExecutionReportFilter
    pagination_class = ExecutionReportPagination
    permission_classes = [IsPrincipal]

    def get_permissions(self):
        if self.request.method == "POST":
            return [IsPrincipal(), IsAgent()]
        return super().get_permissions()

    def get_queryset(self):
        return execution_reports_visible_to(self.request.user)

    @extend_schema(
        summary="List execution reports",
        description=(
            "Newest first, cursor-paginated. An agent sees its own reports; a human member "
            "sees the company's. Each report shows its capture status and the memory it "
            "produced."
        ),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Report an execution outcome",
        description=(
            "Stores one execution report (append-only) after removing secrets and e-mail "
            "addresses from every free-text field, and answers at once with the capture "
            "status: `queued` (a background task will decide whether the outcome becomes a "
            "procedural lesson), `disabled` (procedural learning is off) or `not_applicable` "
            "(the company's capture strategy ignores this outcome). Raw conversation "
            "messages are never part of a report."
        ),
        request=s.ExecutionReportSubmitSerializer,
        responses={202: s.ExecutionReportAcceptedSerializer, 400: PROBLEM, 404: PROBLEM},
        examples=[
            OpenApiExample("A failure", value=REPORT_EXAMPLE, request_only=True),
            OpenApiExample(
                "Accepted",
                value={"id": "0b7c5a52-3c1e-4f7e-9a55-8d0c1b6f2e11", "capture": "queued"},
                response_only=True,
                status_codes=["202"],
            ),
        ],
    )
    def post(self, request, *args, **kwargs):
        if not isinstance(request.data, dict):
            raise InvalidInputError(BODY_NOT_OBJECT, code="validation_error")
        submitted = MemoryService(request.user).report_execution(request.data)
        return Response(
            {"id": str(submitted.report.pk), "capture": submitted.capture},
            status=status.HTTP_202_ACCEPTED,
        )


@extend_schema(tags=["executions"])
class ExecutionReportDetailView(APIView):
    permission_classes = [IsPrincipal]
    serializer_class = s.ExecutionReportSerializer

    @extend_schema(
        summary="Read one execution report",
        responses={200: s.ExecutionReportSerializer, 404: PROBLEM},
    )
    def get(self, request, pk):
        report = execution_report_get(principal=request.user, report_id=pk)
        return Response(s.ExecutionReportSerializer(report).data)


class MarkdownRenderer(BaseRenderer):
    media_type = "text/markdown"
    format = "md"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, str):
            return data.encode(self.charset)
        return json.dumps(data).encode(self.charset)  # a problem body, when one is rendered


@extend_schema(tags=["memories"])
class LessonSkillMdView(APIView):
    permission_classes = [IsPrincipal]
    renderer_classes = [JSONRenderer, MarkdownRenderer]

    @extend_schema(
        summary="Download a procedural lesson as SKILL.md",
        description=(
            "The lesson in the Agent Skills format (YAML front matter `name`, `description`; "
            "when to use, steps, rationale), whether or not the company writes SKILL.md "
            "files to a directory."
        ),
        responses={
            (200, "text/markdown"): OpenApiResponse(response=OpenApiTypes.STR),
            404: PROBLEM,
        },
    )
    def get(self, request, pk):
        lesson = lesson_for(principal=request.user, memory_id=pk)
        response = HttpResponse(
            lesson_skill_md(lesson), content_type="text/markdown; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{lesson.skill_name}-SKILL.md"'
        return response


@extend_schema(tags=["memories"])
class LessonAppliedView(APIView):
    permission_classes = [IsPrincipal, IsAgent]

    @extend_schema(
        summary="Record that the caller applied a procedural lesson",
        description=(
            "Increments `application_count` and sets `last_applied_at` on one of the "
            "caller's procedural memories (or a shared one of the company). No body."
        ),
        request=None,
        responses={
            200: s.LessonAppliedSerializer,
            404: PROBLEM,
            409: PROBLEM,
            422: PROBLEM,
        },
    )
    def post(self, request, pk):
        if request.data:
            fields = sorted(request.data) if isinstance(request.data, dict) else [None]
            raise InvalidInputError(
                f"{fields[0]}: {APPLIED_TAKES_NO_BODY}" if fields[0] else APPLIED_TAKES_NO_BODY,
                code="validation_error",
                errors=[
                    {"field": f, "message": APPLIED_TAKES_NO_BODY, "code": "unknown_field"}
                    for f in fields
                ],
            )
        memory = MemoryService(request.user).lesson_applied(pk)
        return Response(s.LessonAppliedSerializer(memory).data)


def _no_body(request) -> None:
    if request.data:
        fields = sorted(request.data) if isinstance(request.data, dict) else [None]
        raise InvalidInputError(
            f"{fields[0]}: {APPLIED_TAKES_NO_BODY}" if fields[0] else APPLIED_TAKES_NO_BODY,
            code="validation_error",
            errors=[
                {"field": f, "message": APPLIED_TAKES_NO_BODY, "code": "unknown_field"}
                for f in fields
            ],
        )


class OrgSkillPagination(StableCursorPagination):
    ordering = ("-created_at", "-fact_id")


@extend_schema(tags=["org skills"])
class OrgSkillListView(generics.ListAPIView):
    """The company's approved org skills of every source, structured, with their counters;
    a person publishes one (`source` `operator`) by posting its fields."""

    permission_classes = [IsPrincipal]
    serializer_class = s.OrgSkillSerializer
    pagination_class = OrgSkillPagination
    filter_backends = []

    def get_permissions(self):
        if self.request.method == "POST":
            return [IsPrincipal(), IsHuman()]
        return super().get_permissions()

    @extend_schema(
        summary="Approved org skills with their usage counters",
        parameters=[s.OrgSkillListQuerySerializer],
        responses={200: s.OrgSkillSerializer(many=True), 400: PROBLEM},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Publish an operator's org skill",
        description=(
            "A person states a skill as fields; its `procedure` fact (text rendered from the "
            "fields, tagged `skill`, `operator`) and its structure (`source: operator`) are "
            "stored in one transaction, under the company's write rule for `procedure` facts. "
            "Its advice is *do* `action`, *avoid* each `avoid` entry, in the situation "
            "`task_type` / `error_category` / `tool` name (empty: any). Retracting the fact "
            "(`POST /api/v1/org/facts/{id}/retract`) retires the skill."
        ),
        request=s.OperatorSkillWriteSerializer,
        responses={201: s.OrgSkillSerializer, 400: PROBLEM, 403: PROBLEM},
    )
    def post(self, request, *args, **kwargs):
        if not isinstance(request.data, dict):
            raise InvalidInputError(BODY_NOT_OBJECT, code="validation_error")
        company = request.user.company
        skill = operator_skill_publish(company=company, actor=request.user, data=request.data)
        row = org_skills(company=company).get(pk=skill.pk)
        return Response(s.OrgSkillSerializer(row).data, status=status.HTTP_201_CREATED)

    def get_queryset(self):
        params = s.OrgSkillListQuerySerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        return org_skills(
            company=self.request.user.company,
            include_retracted=params.validated_data["include_retracted"],
        )


@extend_schema(tags=["org skills"])
class OrgSkillAppliedView(APIView):
    permission_classes = [IsPrincipal, IsAgent]

    @extend_schema(
        summary="Record that the caller applied an approved org skill",
        description=(
            "Increments `application_count` and sets `last_applied_at` on one of the "
            "company's approved org skills (the id is its procedure fact's). No body."
        ),
        request=None,
        responses={200: s.OrgSkillSerializer, 404: PROBLEM, 409: PROBLEM},
    )
    def post(self, request, pk):
        _no_body(request)
        skill = MemoryService(request.user).org_skill_applied(pk)
        return Response(s.OrgSkillSerializer(skill).data)
