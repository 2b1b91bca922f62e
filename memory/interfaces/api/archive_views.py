"""REST endpoints of the memory archive: search the caller's archived memories and restore
one into the hot store. Another agent's archive, or another company's, answers 404."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.core.selectors.archive import ArchiveQuery
from memory.interfaces.api import archive_serializers as s
from memory.interfaces.api.views.common import AgentView
from synthorg.api.schema import PROBLEM

NOT_FOUND = OpenApiResponse(description="problem+json: no such archived memory of the caller")
_LIST_PARAMS = {"namespace", "category", "tag"}


@extend_schema(tags=["archive"])
class ArchiveSearchView(AgentView, APIView):
    @extend_schema(
        summary="Search the caller's archived memories",
        description=(
            "Full-text search (websearch syntax, english stemming) over the content of "
            "memories that consolidation moved to the archive; without `q`, the most recently "
            "archived first. Restored entries are left out unless `include_restored=true`."
        ),
        parameters=[
            OpenApiParameter("q", str, required=False, description="Search text."),
            OpenApiParameter("namespace", str, many=True, required=False),
            OpenApiParameter("category", str, many=True, required=False),
            OpenApiParameter("tag", str, many=True, required=False, description="All required."),
            OpenApiParameter("since", str, required=False, description="Original created_at ≥."),
            OpenApiParameter("until", str, required=False, description="Original created_at ≤."),
            OpenApiParameter("include_restored", bool, required=False),
            OpenApiParameter("limit", int, required=False, description="1–1000 (default 10)."),
        ],
        responses={200: s.ArchiveSearchResultSerializer, 400: PROBLEM},
    )
    def get(self, request):
        params = {
            key: (request.query_params.getlist(key) if key in _LIST_PARAMS else value)
            for key, value in request.query_params.items()
        }
        serializer = s.ArchiveSearchQuerySerializer(data=params)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        query = ArchiveQuery(
            text=data.get("q") or None,
            namespaces=tuple(data.get("namespace", ())),
            categories=tuple(data.get("category", ())),
            tags=tuple(data.get("tag", ())),
            since=data.get("since"),
            until=data.get("until"),
            include_restored=data["include_restored"],
            limit=data["limit"],
        )
        rows = self.service.archive_search(query)
        return Response(
            {"count": len(rows), "results": s.ArchivedMemorySerializer(rows, many=True).data}
        )


@extend_schema(tags=["archive"])
class ArchiveRestoreView(AgentView, APIView):
    @extend_schema(
        summary="Restore an archived memory",
        description=(
            "Puts the archived memory back into the caller's memories (embedded and searchable "
            "again, with its original created_at). Restoring the same entry twice is a 409."
        ),
        request=None,
        responses={
            200: s.ArchiveRestoreResultSerializer,
            404: NOT_FOUND,
            409: PROBLEM,
            422: PROBLEM,
        },
    )
    def post(self, request, pk):
        result = self.service.archive_restore(pk)
        return Response(
            {
                "archive_id": result.archived.pk,
                "original_id": result.archived.original_id,
                "memory_id": result.memory_id,
                "restored_at": result.archived.restored_at,
            }
        )
