"""Operator endpoints for data portability and erasure (humans, role admin or owner)."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from persistence.api.permissions import IsHuman, IsPrincipal
from persistence.selectors.agents import agents_for_company
from persistence.services.erasure import REASON_MAX_CHARS, agent_erase
from persistence.services.portability import content_export

UNKNOWN_FIELD = "Unknown field: {name}."


class ExportQuerySerializer(serializers.Serializer):
    agent = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1)

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {n: [UNKNOWN_FIELD.format(name=n)] for n in unknown}, code="unknown_field"
            )
        return super().to_internal_value(data)


class EraseSerializer(ExportQuerySerializer):
    agent = None
    reason = serializers.CharField(max_length=REASON_MAX_CHARS, allow_blank=True, default="")


class ErasureReportSerializer(serializers.Serializer):
    agent_id = serializers.IntegerField()
    counts = serializers.DictField(child=serializers.IntegerField())
    keys_revoked = serializers.IntegerField()
    retained = serializers.ListField(child=serializers.CharField())
    is_active = serializers.BooleanField()


@extend_schema(tags=["portability"])
class ContentExportView(APIView):
    permission_classes = [IsPrincipal, IsHuman]

    @extend_schema(
        summary="Export the company's (or one agent's) content as JSON Lines",
        description=(
            "Memories, shared knowledge, the archive and every other registered kind of agent "
            "content, one JSON object per line after a `synthorg_export` header line. "
            "Humans with role admin or owner; the export is audited (`content.exported`)."
        ),
        parameters=[
            OpenApiParameter("agent", int, description="Only this agent's content (its id).")
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                response=OpenApiTypes.STR, description="The export, as JSON Lines."
            )
        },
    )
    def get(self, request):
        query = ExportQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        principal = request.user
        agent = None
        if "agent" in query.validated_data:
            agent = get_object_or_404(
                agents_for_company(principal.company), pk=query.validated_data["agent"]
            )
        lines = content_export(
            company=principal.company, agent=agent, principal=principal, via="api"
        )
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        name = principal.company.slug + (f"-{agent.name}" if agent else "")
        response["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
        return response


@extend_schema(tags=["portability"])
class AgentEraseView(APIView):
    permission_classes = [IsPrincipal, IsHuman]

    @extend_schema(
        summary="Erase all of an agent's content and deactivate it",
        description=(
            "Deletes the agent's memories (with their vectors), shared knowledge, archive and "
            "every other registered kind of agent content, revokes its API keys and deactivates "
            "it, in one transaction with one audit entry (`agent.erased`, counts only). "
            "Humans with role admin or owner. Repeating it erases nothing more."
        ),
        request=EraseSerializer,
        responses={200: ErasureReportSerializer},
    )
    def post(self, request, pk: int):
        body = EraseSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        principal = request.user
        agent = get_object_or_404(agents_for_company(principal.company), pk=pk)
        report = agent_erase(agent=agent, principal=principal, reason=body.validated_data["reason"])
        payload = {
            "agent_id": report.agent_id,
            "counts": report.counts,
            "keys_revoked": report.keys_revoked,
            "retained": list(report.retained),
            "is_active": False,
        }
        return Response(ErasureReportSerializer(payload).data)
