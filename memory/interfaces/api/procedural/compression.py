"""REST: run the experience compressor (operators) and read its compressed experiences."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.procedural.models import CompressedExperience, CompressionRun
from memory.procedural.selectors import compressed_experiences_visible_to
from memory.procedural.services.compression import experience_compress_run
from persistence.access import OPERATOR, ROLE_RANK
from persistence.api.permissions import IsPrincipal
from synthorg.api.schema import PROBLEM
from synthorg.api.serializers import ModelSerializer

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
            "skipped",
            "errors",
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
            "errors leave the report for the next run (`errors`). 409 "
            "`experience_compressor_disabled` when the compressor is off."
        ),
        request=None,
        responses={201: CompressionRunSerializer, 403: PROBLEM, 409: PROBLEM},
    )
    def post(self, request):
        run = experience_compress_run(company=request.user.company, trigger="manual")
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
