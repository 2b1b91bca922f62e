"""Operator endpoints for data portability and erasure (humans, role admin or owner)."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from persistence.api.permissions import IsHuman, IsPrincipal
from persistence.selectors.agents import agents_for_company
from persistence.services.erasure import REASON_MAX_CHARS, agent_erase
from persistence.services.portability import content_export, content_import
from synthorg.api.fields import NamespaceField, SubjectField
from synthorg.api.serializers import Serializer

UNKNOWN_FIELD = "Unknown field: {name}."
IMPORT_MAX_BYTES = 50 * 1024 * 1024
IMPORT_TOO_LARGE = "An import over the API is limited to 50 MB; use manage.py import_memories."
NOT_UTF8 = "The body is not UTF-8 text."


class JSONLinesParser(BaseParser):
    """``application/x-ndjson``: the body as a list of lines (bounded in size)."""

    media_type = "application/x-ndjson"

    def parse(self, stream, media_type=None, parser_context=None):
        body = stream.read(IMPORT_MAX_BYTES + 1) if stream is not None else b""
        if len(body) > IMPORT_MAX_BYTES:
            raise ParseError(IMPORT_TOO_LARGE, code="payload_too_large")
        try:
            return body.decode("utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise ParseError(NOT_UTF8, code="parse_error") from exc


class ImportCountsSerializer(Serializer):
    created = serializers.IntegerField()
    skipped = serializers.IntegerField()
    remapped = serializers.IntegerField()
    embedded = serializers.IntegerField()
    pending = serializers.IntegerField()


class ImportResultSerializer(Serializer):
    counts = serializers.DictField(child=ImportCountsSerializer())


class ExportQuerySerializer(Serializer):
    agent = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    namespace = serializers.ListField(
        child=NamespaceField(json_text=True), required=False, min_length=1, max_length=50
    )
    subject = SubjectField(required=False)

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {n: [UNKNOWN_FIELD.format(name=n)] for n in unknown}, code="unknown_field"
            )
        return super().to_internal_value(data)


class EraseSerializer(ExportQuerySerializer):
    agent = None
    namespace = None
    subject = None
    reason = serializers.CharField(max_length=REASON_MAX_CHARS, allow_blank=True, default="")


class ErasureReportSerializer(Serializer):
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
            OpenApiParameter("agent", int, description="Only this agent's content (its id)."),
            OpenApiParameter(
                "subject",
                str,
                description=(
                    "Only content about this end user (memories, shared knowledge, the "
                    "archive, conversations with their messages and extraction runs, the "
                    "request log, execution reports); see Subjects."
                ),
            ),
            OpenApiParameter(
                "namespace",
                str,
                many=True,
                description=(
                    "Only memories, shared knowledge and archived memories in these "
                    'namespaces: a flat name, or a tuple as JSON text (`["user","u-1"]`, '
                    "rendered through the company's `memory.namespace_templates`; "
                    "`{company}` is the company, `{agent}` the `agent` filtered by)."
                ),
            ),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                response=OpenApiTypes.STR, description="The export, as JSON Lines."
            )
        },
    )
    def get(self, request):
        params = request.query_params
        data = params.dict()
        if "namespace" in params:
            data["namespace"] = params.getlist("namespace")
        query = ExportQuerySerializer(data=data)
        query.is_valid(raise_exception=True)
        principal = request.user
        agent = None
        if "agent" in query.validated_data:
            agent = get_object_or_404(
                agents_for_company(principal.company), pk=query.validated_data["agent"]
            )
        lines = content_export(
            company=principal.company,
            agent=agent,
            principal=principal,
            via="api",
            namespaces=query.validated_data.get("namespace", ()),
            subject=query.validated_data.get("subject"),
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


@extend_schema(tags=["portability"])
class ContentImportView(APIView):
    permission_classes = [IsPrincipal, IsHuman]
    parser_classes = [JSONLinesParser]

    @extend_schema(
        summary="Import an export (JSON Lines) into the caller's company",
        description=(
            "The body is a file produced by `GET /export` or `manage.py export_memories` "
            "(`Content-Type: application/x-ndjson`, at most 50 MB). One transaction, all or "
            "nothing; idempotent (rows already present are skipped; a row keeps its id only "
            "when the export proves it is this company's, others get new ids, counted as "
            "`remapped`; vectors recomputed when the embedder differs); agents are "
            "matched by name and created when missing. Humans with role admin or owner; "
            "audited (`content.imported`)."
        ),
        request={"application/x-ndjson": OpenApiTypes.STR},
        responses={200: ImportResultSerializer},
    )
    def post(self, request):
        principal = request.user
        results = content_import(
            company=principal.company, lines=request.data, principal=principal, via="api"
        )
        payload = {"counts": {kind: vars(counts) for kind, counts in results.items()}}
        return Response(ImportResultSerializer(payload).data)
