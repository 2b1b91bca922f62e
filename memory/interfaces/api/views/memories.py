"""Private memories: store (one or a batch), list, read, change, delete, count."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.core.domain import MemoryUpdateRequest, parse_request
from memory.core.models.memory import Memory
from memory.core.models.revision import MemoryRevision
from memory.interfaces.api import serializers as s
from memory.interfaces.api.filters import MemoryFilter
from memory.interfaces.api.views.common import (
    MEMORY_EXAMPLE,
    NOT_FOUND,
    STORE_EXAMPLE,
    STORED,
    AgentView,
    prefixed_errors,
    store_request_from,
)
from memory.procedural.selectors import attach_lessons
from synthorg.api.schema import PROBLEM
from synthorg.errors import DomainError


@extend_schema(tags=["memories"])
class MemoryCollectionView(AgentView, generics.ListAPIView):
    serializer_class = s.MemorySerializer
    queryset = Memory.objects.none()  # for the schema; requests use get_queryset()
    filterset_class = MemoryFilter

    def get_queryset(self):
        return self.service.memories()

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        attach_lessons(page or [])  # one query, only when the page holds procedural memories
        return page

    @extend_schema(
        summary="List the caller's memories",
        description=(
            "The calling agent's private memories, newest first, paginated. Expired memories "
            "never appear; superseded ones only with `include_superseded=true`."
        ),
        examples=[
            OpenApiExample(
                "A page",
                value={"count": 1, "next": None, "previous": None, "results": [MEMORY_EXAMPLE]},
                response_only=True,
            )
        ],
    )
    def get(self, request, *args, **kwargs):
        # A page of the list may come from a streaming replica (MemoryService.replica_read).
        return self.service.replica_read(
            lambda: super(MemoryCollectionView, self).get(request, *args, **kwargs)
        )

    @extend_schema(
        summary="Store one memory, or a batch of up to 500",
        description=(
            'Send one memory object, or `{"memories": [...]}` (1–500, stored in one '
            "transaction with one embedder call). The agent's `memory_level` decides the "
            "level: `none` stores nothing (`stored: false`, 200); `session` needs "
            "`session_id`; `project` needs the `project_id` of an open project of the "
            "company. A near duplicate (Dice ≥ 0.8 over normalised terms, same namespace "
            "and category) returns the existing id with `deduplicated: true` (200). If the "
            "embedder fails the memory is still stored with `embedding_status: pending`."
        ),
        request=PolymorphicProxySerializer(
            component_name="MemoryStoreBody",
            serializers=[s.MemoryStoreSerializer, s.MemoryBatchStoreSerializer],
            resource_type_field_name=None,
        ),
        responses={
            201: PolymorphicProxySerializer(
                component_name="MemoryStoreOutcome",
                serializers=[s.StoreResultSerializer, s.BatchStoreResultSerializer],
                resource_type_field_name=None,
            ),
            200: PolymorphicProxySerializer(
                component_name="MemoryStoreNoop",
                serializers=[s.StoreResultSerializer, s.BatchStoreResultSerializer],
                resource_type_field_name=None,
            ),
            400: PROBLEM,
            404: PROBLEM,
            409: PROBLEM,
        },
        examples=[
            OpenApiExample("One memory", value=STORE_EXAMPLE, request_only=True),
            OpenApiExample(
                "A batch",
                value={
                    "memories": [
                        STORE_EXAMPLE,
                        {"content": "Ana leads billing.", "category": "social"},
                    ]
                },
                request_only=True,
            ),
            OpenApiExample("Stored", value=STORED, response_only=True, status_codes=["201"]),
            OpenApiExample(
                "Near duplicate",
                value={**STORED, "deduplicated": True},
                response_only=True,
                status_codes=["200"],
            ),
            OpenApiExample(
                "Level none",
                value={
                    "id": None,
                    "stored": False,
                    "deduplicated": False,
                    "embedding_status": None,
                },
                response_only=True,
                status_codes=["200"],
            ),
        ],
    )
    def post(self, request, *args, **kwargs):
        data = request.data
        if isinstance(data, list):
            data = {"memories": data}
        if isinstance(data, dict) and "memories" in data:
            return self._store_batch(data)
        serializer = s.MemoryStoreSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        result = self.service.store(
            store_request_from(serializer.validated_data, service=self.service)
        )
        created = result.stored and not result.deduplicated
        return Response(
            s.StoreResultSerializer(result.model_dump()).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    def _store_batch(self, data):
        serializer = s.MemoryBatchStoreSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        requests = [
            store_request_from(item, service=self.service, prefix=f"memories[{index}]")
            for index, item in enumerate(serializer.validated_data["memories"])
        ]
        try:
            results = self.service.store_batch(requests)
        except DomainError as exc:
            # The service names batch items "[i].field" (a lone request just "field").
            raise prefixed_errors(
                exc, "memories" if len(requests) > 1 else "memories[0]."
            ) from None
        created = sum(1 for r in results if r.stored and not r.deduplicated)
        payload = {
            "results": [r.model_dump() for r in results],
            "created": created,
            "deduplicated": sum(1 for r in results if r.deduplicated),
        }
        return Response(
            s.BatchStoreResultSerializer(payload).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


@extend_schema(tags=["memories"])
class MemoryDetailView(AgentView, APIView):
    @extend_schema(
        summary="One of the caller's memories",
        responses={200: s.MemorySerializer, 404: NOT_FOUND},
        examples=[OpenApiExample("A memory", value=MEMORY_EXAMPLE, response_only=True)],
    )
    def get(self, request, pk):
        return Response(s.MemorySerializer(self.service.get(pk)).data)

    @extend_schema(
        summary="Change a memory",
        description=(
            "Partial update. Changing `content` or `context` re-embeds the memory (pending if "
            "the embedder fails). `expires_at: null` removes the expiry. Superseded memories "
            "cannot be changed (409)."
        ),
        request=s.MemoryUpdateSerializer,
        responses={200: s.MemorySerializer, 400: PROBLEM, 404: NOT_FOUND, 409: PROBLEM},
        examples=[
            OpenApiExample(
                "New content",
                value={
                    "content": "The billing service deploys every Thursday.",
                    "tags": ["deploy"],
                },
                request_only=True,
            )
        ],
    )
    def patch(self, request, pk):
        serializer = s.MemoryUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        update = parse_request(MemoryUpdateRequest, serializer.validated_data)
        memory = self.service.update(pk, update)
        return Response(s.MemorySerializer(memory).data)

    @extend_schema(
        summary="Delete a memory",
        description="Deletes it for good and records an audit entry.",
        responses={204: None, 404: NOT_FOUND},
    )
    def delete(self, request, pk):
        self.service.delete(pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(tags=["memories"])
class MemoryHistoryView(AgentView, generics.ListAPIView):
    serializer_class = s.MemoryRevisionSerializer
    queryset = MemoryRevision.objects.none()  # for the schema; requests use get_queryset()

    def get_queryset(self):
        return self.service.history(self.kwargs["pk"])

    @extend_schema(
        summary="A memory's history: the texts its corrections replaced",
        description=(
            "Every correction of the memory (a human replacing its text in the console), "
            "oldest first, paginated: the text replaced, who corrected it, when and why. "
            "Readable for the caller's own memories and the company's shared knowledge; "
            "anything else answers 404 `memory_not_found`, like `GET /memories/{id}`. The "
            "texts are deleted with the memory (a deletion, an erasure); the audit keeps only "
            "a SHA-256 of each."
        ),
        responses={200: s.MemoryRevisionSerializer(many=True), 404: NOT_FOUND},
        examples=[
            OpenApiExample(
                "A page",
                value={
                    "count": 1,
                    "next": None,
                    "previous": None,
                    "results": [
                        {
                            "id": "9b2d7c1e-3f4a-4e5b-8c6d-7e8f9a0b1c2d",
                            "previous_content": "The billing service deploys every Thursday.",
                            "reason": "The deploy day moved to Friday.",
                            "corrected_by": "ana",
                            "created_at": "2026-11-21T09:30:00Z",
                            "audit_entry_id": 4812,
                        }
                    ],
                },
                response_only=True,
            )
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


@extend_schema(tags=["memories"])
class MemoryCountView(AgentView, APIView):
    @extend_schema(
        summary="How many live memories the caller has",
        parameters=[
            OpenApiParameter(
                "category",
                str,
                enum=s.CATEGORY_VALUES,
                required=False,
                description="Count only this category.",
            )
        ],
        responses={200: s.MemoryCountSerializer, 400: PROBLEM},
        examples=[
            OpenApiExample("Count", value={"count": 12, "category": "semantic"}, response_only=True)
        ],
    )
    def get(self, request):
        query = s.MemoryCountQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        category = query.validated_data.get("category")
        count = self.service.count(category)
        return Response({"count": count, "category": category})
