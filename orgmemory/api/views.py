"""Org-memory API: thin views over ``orgmemory.services`` and ``orgmemory.selectors``."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from orgmemory import selectors
from orgmemory.api.serializers import (
    CATEGORY_VALUES,
    AsOfQuerySerializer,
    FactListQuerySerializer,
    FactQueryResultSerializer,
    FactQuerySerializer,
    FactRetractSerializer,
    FactSerializer,
    FactWriteSerializer,
    LogEntrySerializer,
    PolicySerializer,
    WriteRequestDecideSerializer,
    WriteRequestFileSerializer,
    WriteRequestListQuerySerializer,
    WriteRequestSerializer,
)
from orgmemory.domain import OrgMemoryQuery
from orgmemory.models import OrgFact, WriteAccessRequest
from orgmemory.services.facts import fact_publish, fact_retract
from orgmemory.services.write_requests import write_request_decide, write_request_file
from persistence.api.permissions import IsAgent, IsHuman, IsPrincipal
from persistence.principal import Principal
from synthorg.api.schema import PROBLEM

AS_OF = OpenApiParameter(
    "as_of",
    type=str,
    description="ISO-8601 time: answer as the org memory stood then.",
    required=False,
)
DENIED = OpenApiResponse(
    description=(
        "problem+json, code `org_write_denied`, with `category`, `rule` (the write rule "
        "that denied it, or null when the category has none), `reason` and `can_request` "
        "(whether the write may be filed as a write-access request)."
    )
)


class IsAnyPrincipal(BasePermission):
    """Any member, viewers included: for POST endpoints that only read."""

    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, Principal)


def _as_of(request):
    params = AsOfQuerySerializer(data=request.query_params)
    params.is_valid(raise_exception=True)
    return params.validated_data["as_of"]


@extend_schema(tags=["org memory"], parameters=[AS_OF])
class PolicyListView(generics.ListAPIView):
    """Core policies: the company config's first, then core_policy facts (oldest first)."""

    serializer_class = PolicySerializer
    queryset = OrgFact.objects.none()
    filter_backends = []

    @extend_schema(summary="Core policies (always in every agent's system prompt)")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return selectors.policies(company=self.request.user.company, as_of=_as_of(self.request))


@extend_schema(tags=["org memory"])
class FactListView(generics.ListAPIView):
    serializer_class = FactSerializer
    queryset = OrgFact.objects.none()
    filter_backends = []

    @extend_schema(
        summary="Live facts (now or as of a time), oldest first",
        parameters=[
            AS_OF,
            OpenApiParameter("category", type=str, enum=CATEGORY_VALUES, required=False),
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Publish a fact, or a new version of one",
        request=FactWriteSerializer,
        responses={201: FactSerializer, 400: PROBLEM, 403: DENIED, 404: PROBLEM, 409: PROBLEM},
    )
    def post(self, request):
        payload = FactWriteSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        company = request.user.company
        entry = fact_publish(
            company=company,
            actor=request.user,
            content=data["content"],
            category=data["category"],
            tags=data.get("tags"),
            fact_id=data.get("fact_id"),
            expected_version=data.get("expected_version"),
        )
        view = selectors.fact_state(company=company, fact_id=entry.fact_id)
        return Response(FactSerializer(view).data, status=status.HTTP_201_CREATED)

    def get_queryset(self):
        params = FactListQuerySerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        category = params.validated_data.get("category")
        return selectors.live_facts(
            company=self.request.user.company,
            categories=None if category is None else {category},
            as_of=params.validated_data["as_of"],
        )


@extend_schema(tags=["org memory"])
class FactQueryView(APIView):
    permission_classes = [IsAnyPrincipal]

    @extend_schema(
        summary="Facts relevant to a context (BM25 + embeddings), optionally as of a time",
        description=(
            "Extended categories by default (core policies come from `policies`). At most "
            "`org_memory.extended_store.max_retrieved_per_query` results."
        ),
        request=FactQuerySerializer,
        responses={200: FactQueryResultSerializer, 400: PROBLEM},
    )
    def post(self, request):
        payload = FactQuerySerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        query = OrgMemoryQuery(
            context=(data["context"] or "").strip() or None,
            categories=None if data["categories"] is None else frozenset(data["categories"]),
            limit=data.get("limit"),
            as_of=data["as_of"],
        )
        results = selectors.query_facts(company=request.user.company, query=query)
        body = {"as_of": data["as_of"], "results": results}
        return Response(FactQueryResultSerializer(body).data)


@extend_schema(tags=["org memory"])
class FactDetailView(APIView):
    @extend_schema(
        summary="One fact (now or as of a time)",
        parameters=[AS_OF],
        responses={200: FactSerializer, 404: PROBLEM},
    )
    def get(self, request, fact_id):
        view = selectors.fact_state(
            company=request.user.company, fact_id=fact_id, as_of=_as_of(request)
        )
        return Response(FactSerializer(view).data)


@extend_schema(tags=["org memory"])
class FactRetractView(APIView):
    @extend_schema(
        summary="Retract a fact (it stays in the log and its history)",
        request=FactRetractSerializer,
        responses={200: FactSerializer, 403: DENIED, 404: PROBLEM, 409: PROBLEM},
    )
    def post(self, request, fact_id):
        payload = FactRetractSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        company = request.user.company
        fact_retract(
            company=company,
            actor=request.user,
            fact_id=fact_id,
            expected_version=payload.validated_data.get("expected_version"),
            reason=payload.validated_data["reason"],
        )
        return Response(FactSerializer(selectors.fact_state(company=company, fact_id=fact_id)).data)


@extend_schema(tags=["org memory"])
class FactHistoryView(APIView):
    @extend_schema(
        summary="Every version of a fact (the operation log rows), oldest first",
        responses={200: LogEntrySerializer(many=True), 404: PROBLEM},
    )
    def get(self, request, fact_id):
        rows = selectors.fact_history(company=request.user.company, fact_id=fact_id)
        return Response(LogEntrySerializer(rows, many=True).data)


@extend_schema(tags=["org memory"])
class WriteRequestListView(generics.ListAPIView):
    serializer_class = WriteRequestSerializer
    queryset = WriteAccessRequest.objects.none()
    filter_backends = []

    def get_permissions(self):
        if self.request.method == "POST":
            return [IsPrincipal(), IsAgent()]
        return [IsPrincipal()]

    @extend_schema(
        summary="Write-access requests (an agent sees its own; a human all of the company's)",
        parameters=[
            OpenApiParameter(
                "status", type=str, enum=WriteAccessRequest.Status.values, required=False
            )
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="File a denied write for human approval",
        request=WriteRequestFileSerializer,
        responses={
            201: WriteRequestSerializer,
            400: PROBLEM,
            403: DENIED,
            404: PROBLEM,
            409: PROBLEM,
            422: PROBLEM,
        },
    )
    def post(self, request):
        payload = WriteRequestFileSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        filed = write_request_file(
            company=request.user.company,
            actor=request.user,
            content=data["content"],
            category=data["category"],
            tags=data["tags"],
            justification=data["justification"],
            fact_id=data.get("fact_id"),
        )
        return Response(WriteRequestSerializer(filed).data, status=status.HTTP_201_CREATED)

    def get_queryset(self):
        params = WriteRequestListQuerySerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        return selectors.write_requests_for(
            principal=self.request.user, status=params.validated_data.get("status")
        )


@extend_schema(tags=["org memory"])
class WriteRequestDetailView(APIView):
    @extend_schema(
        summary="One write-access request", responses={200: WriteRequestSerializer, 404: PROBLEM}
    )
    def get(self, request, request_id):
        found = selectors.write_request_for(principal=request.user, request_id=request_id)
        return Response(WriteRequestSerializer(found).data)


@extend_schema(tags=["org memory"])
class WriteRequestDecideView(APIView):
    permission_classes = [IsPrincipal, IsHuman]

    @extend_schema(
        summary="Approve (publishes the fact) or reject (reason required) a request",
        request=WriteRequestDecideSerializer,
        responses={
            200: WriteRequestSerializer,
            400: PROBLEM,
            403: PROBLEM,
            404: PROBLEM,
            409: PROBLEM,
        },
    )
    def post(self, request, request_id):
        payload = WriteRequestDecideSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        decided = write_request_decide(
            company=request.user.company,
            actor=request.user,
            request_id=request_id,
            decision=payload.validated_data["decision"],
            reason=payload.validated_data["reason"],
        )
        return Response(WriteRequestSerializer(decided).data)
