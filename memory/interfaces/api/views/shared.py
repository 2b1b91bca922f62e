"""Shared knowledge (publish, retract) and ending a session."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiExample,
    extend_schema,
)
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.interfaces.api import serializers as s
from memory.interfaces.api.views.common import (
    NOT_FOUND,
    STORED,
    AgentView,
    store_request_from,
)
from synthorg.api.schema import PROBLEM


@extend_schema(tags=["shared knowledge"])
class SharedPublishView(AgentView, APIView):
    @extend_schema(
        summary="Publish shared knowledge",
        description=(
            "Publishes a memory every agent of the company can find with `/shared/search` "
            "(and, by default, with `/memories/search`). Only the publisher can retract it. "
            "403 `shared_knowledge_disabled` while the company has shared knowledge off."
        ),
        request=s.SharedPublishSerializer,
        responses={
            201: s.StoreResultSerializer,
            200: s.StoreResultSerializer,
            400: PROBLEM,
            403: PROBLEM,
        },
        examples=[
            OpenApiExample(
                "Publish",
                value={
                    "content": "Staging resets every night at 02:00 UTC.",
                    "category": "procedural",
                },
                request_only=True,
            ),
            OpenApiExample("Published", value=STORED, response_only=True, status_codes=["201"]),
        ],
    )
    def post(self, request):
        serializer = s.SharedPublishSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = self.service.shared_publish(
            store_request_from(serializer.validated_data, service=self.service)
        )
        return Response(
            s.StoreResultSerializer(result.model_dump()).data,
            status=status.HTTP_200_OK if result.deduplicated else status.HTTP_201_CREATED,
        )


@extend_schema(tags=["shared knowledge"])
class SharedDetailView(AgentView, APIView):
    @extend_schema(
        summary="Retract shared knowledge",
        description="Only the agent that published the entry may retract it (403 otherwise; "
        "403 `shared_knowledge_disabled` while the company has shared knowledge off).",
        responses={204: None, 403: PROBLEM, 404: NOT_FOUND},
    )
    def delete(self, request, pk):
        self.service.shared_retract(pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(tags=["memories"])
class SessionEndView(AgentView, APIView):
    @extend_schema(
        summary="End a session",
        description="Purges the caller's session-level memories of this session.",
        request=None,
        responses={200: s.SessionEndSerializer, 400: PROBLEM},
        examples=[
            OpenApiExample(
                "Ended", value={"session_id": "run-42", "memories_purged": 3}, response_only=True
            )
        ],
    )
    def post(self, request, session_id):
        purged = self.service.session_end(session_id)
        return Response({"session_id": session_id, "memories_purged": purged})
