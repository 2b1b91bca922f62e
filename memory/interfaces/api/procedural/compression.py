"""REST: run the experience compressor and the wiki export (operators), read the compressed
experiences, download the export as a zip (human members)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.procedural.models import CompressedExperience, CompressionRun
from memory.procedural.selectors import compressed_experiences_visible_to
from memory.procedural.services.compression import experience_compress_run
from memory.procedural.services.wiki import wiki_archive, wiki_export_run
from memory.prompting.llm_checks import llm_request_deadline
from persistence.access import OPERATOR, ROLE_RANK
from persistence.api.permissions import IsHuman, IsPrincipal
from persistence.selectors.config import company_config
from synthorg.api.schema import PROBLEM
from synthorg.api.serializers import ModelSerializer, Serializer

LIST_LIMIT = 100


class IsOperator(BasePermission):
    message = "Running the experience compressor is for human operators (operator or above)."
    code = "role_insufficient"

    def has_permission(self, request, view) -> bool:
        user = request.user
        return user.is_human and ROLE_RANK.get(user.role, -1) >= ROLE_RANK[OPERATOR]


class CompressionRunSerializer(ModelSerializer):
    class Meta:
        model = CompressionRun
        fields = (
            "id",
            "trigger",
            "method",
            "min_compression_ratio",
            "reports_seen",
            "compressed",
            "skipped_below_ratio",
            "failed",
            "deferred",
            "skipped",
            "errors",
            "degraded",
            "started_at",
            "finished_at",
        )
        read_only_fields = fields


class CompressedExperienceSerializer(ModelSerializer):
    agent_id = serializers.IntegerField(read_only=True)
    report_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = CompressedExperience
        fields = (
            "id",
            "agent_id",
            "report_id",
            "content",
            "raw_chars",
            "compression_ratio",
            "compressor_version",
            "method",
            "model",
            "created_at",
        )
        read_only_fields = fields


@extend_schema(tags=["procedural"])
class CompressionRunView(APIView):
    permission_classes = [IsPrincipal, IsOperator]

    @extend_schema(
        summary="Compress raw execution traces into strategic learnings",
        description=(
            "Runs the GEMS two-tier experience compressor over the company's uncompressed "
            "execution reports (at most 200, newest first): with an LLM each becomes one "
            "strategic learning (`method: llm`), without one an extractive learning. Learnings "
            "below `min_compression_ratio` are not kept (`skipped`: report id → ratio); LLM "
            "errors leave the report for the next run (`errors`). With an LLM the run holds "
            "one of the company's LLM slots and its LLM calls share the request's LLM budget "
            "(`SYNTHORG_LLM_REQUEST_BUDGET`): when it runs out, what was compressed is kept "
            "and the rest is left for the next run (`deferred`, `degraded: "
            '["llm_budget_exceeded"]`). 409 `experience_compressor_disabled` when the '
            "compressor is off; 503 `llm_slots_busy` (with `Retry-After`) when every LLM "
            "slot of the company is busy: nothing ran."
        ),
        request=None,
        responses={201: CompressionRunSerializer, 403: PROBLEM, 409: PROBLEM, 503: PROBLEM},
    )
    def post(self, request):
        run = experience_compress_run(
            company=request.user.company, trigger="manual", deadline=llm_request_deadline()
        )
        return Response(CompressionRunSerializer(run).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["procedural"])
class CompressedExperienceListView(APIView):
    permission_classes = [IsPrincipal]

    @extend_schema(
        summary="Compressed experiences (Tier 2), newest first",
        description="An agent sees those of its own reports; a human member all the company's "
        f"(at most {LIST_LIMIT}).",
        responses={200: CompressedExperienceSerializer(many=True), 403: PROBLEM},
    )
    def get(self, request):
        rows = compressed_experiences_visible_to(request.user)
        return Response(CompressedExperienceSerializer(rows[:LIST_LIMIT], many=True).data)


class WikiExportSerializer(Serializer):
    export_root = serializers.CharField(help_text="Relative to the company's directory.")
    raw_pages = serializers.IntegerField()
    wiki_pages = serializers.IntegerField()
    exported_at = serializers.DateTimeField()


@extend_schema(tags=["procedural"])
class WikiExportView(APIView):
    permission_classes = [IsPrincipal, IsOperator]

    @extend_schema(
        summary="Write the wiki export now",
        description=(
            "Writes `raw/` (execution reports and their captures), `wiki/` (compressed "
            "experiences) and `index.md` under `memory.consolidation.wiki_export.export_root` "
            "in the company's server-owned directory, replacing the previous export. 409 "
            "`wiki_export_disabled`; 422 `wiki_export_root` when the root leaves the "
            "company's directory."
        ),
        request=None,
        responses={201: WikiExportSerializer, 403: PROBLEM, 409: PROBLEM, 422: PROBLEM},
    )
    def post(self, request):
        company = request.user.company
        export = wiki_export_run(company=company, trigger="manual", actor=request.user)
        root = company_config(company).memory.consolidation.wiki_export.export_root
        payload = {
            "export_root": root,
            "raw_pages": export.raw_pages,
            "wiki_pages": export.wiki_pages,
            "exported_at": export.exported_at,
        }
        return Response(WikiExportSerializer(payload).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["procedural"])
class WikiArchiveView(APIView):
    permission_classes = [IsPrincipal, IsHuman]

    @extend_schema(
        summary="The current wiki export as a zip",
        responses={
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY),
            403: PROBLEM,
            404: PROBLEM,
            422: PROBLEM,
        },
    )
    def get(self, request):
        return wiki_zip_response(request.user.company)


def wiki_zip_response(company) -> HttpResponse:
    response = HttpResponse(wiki_archive(company), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{company.slug}-wiki.zip"'
    return response
