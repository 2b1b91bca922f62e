"""Approval queue API: thin views over ``orgmemory.services.approvals`` and ``orgmemory.inbox``.

Agents ask for approval and read their own items; humans read all of their company's and
those with role operator or above decide. Other companies' items are 404.
"""

from __future__ import annotations

from datetime import timedelta

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from orgmemory import inbox
from orgmemory.api.approval_serializers import (
    ApprovalApproveSerializer,
    ApprovalItemSerializer,
    ApprovalListQuerySerializer,
    ApprovalRejectSerializer,
    ApprovalRequestSerializer,
)
from orgmemory.approval_models import RISK_LEVELS, ApprovalItem
from orgmemory.services.approvals import (
    ACTION_TYPE_RESERVED,
    AGENTS_REQUEST_ONLY,
    APPROVE,
    REJECT,
    approval_consume,
    approval_decide,
    approval_request,
    has_applier,
)
from persistence.api.permissions import IsPrincipal
from persistence.models import Task
from synthorg.api.pagination import StableCursorPagination
from synthorg.api.schema import PROBLEM
from synthorg.errors import AccessDeniedError, InvalidInputError, NotFoundError

TAGS = ["approvals"]


@extend_schema(tags=TAGS)
class ApprovalListView(generics.ListAPIView):
    serializer_class = ApprovalItemSerializer
    queryset = ApprovalItem.objects.none()
    pagination_class = StableCursorPagination
    filter_backends = []

    @extend_schema(
        summary="Approval items (a human sees the company's; an agent those it asked for)",
        parameters=[
            OpenApiParameter("status", type=str, enum=ApprovalItem.Status.values, required=False),
            OpenApiParameter("risk", type=str, enum=list(RISK_LEVELS), required=False),
            OpenApiParameter("action_type", type=str, required=False),
            OpenApiParameter("source", type=str, required=False),
        ],
        responses={200: ApprovalItemSerializer(many=True), 400: PROBLEM},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Ask a human to approve an action (agents)",
        request=ApprovalRequestSerializer,
        responses={201: ApprovalItemSerializer, 400: PROBLEM, 403: PROBLEM, 404: PROBLEM},
    )
    def post(self, request):
        principal = request.user
        if not principal.is_agent:
            raise AccessDeniedError(AGENTS_REQUEST_ONLY, code="agents_only")
        payload = ApprovalRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        if has_applier(data["action_type"]):
            message = ACTION_TYPE_RESERVED.format(action_type=data["action_type"])
            raise InvalidInputError(
                message,
                code="action_type_reserved",
                errors=[{"field": "action_type", "message": message, "code": "reserved"}],
            )
        task = None
        if data.get("task_id") is not None:
            task = Task.objects.filter(company=principal.company, pk=data["task_id"]).first()
            if task is None:
                raise NotFoundError(
                    "No task with this id exists in your company.", code="task_not_found"
                )
        ttl = data.get("ttl_seconds")
        item = approval_request(
            company=principal.company,
            action_type=data["action_type"],
            title=data["title"],
            description=data.get("description", ""),
            risk_level=data["risk_level"],
            source="api",
            requester_agent=principal.agent,
            evidence=data["evidence"],
            metadata=data["metadata"],
            ttl=timedelta(seconds=ttl) if ttl is not None else None,
            task=task,
        )
        return Response(ApprovalItemSerializer(item).data, status=status.HTTP_201_CREATED)

    def get_queryset(self):
        params = ApprovalListQuerySerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        return inbox.approval_items_for(
            principal=self.request.user,
            status=data.get("status"),
            risk_level=data.get("risk"),
            action_type=data.get("action_type"),
            source=data.get("source"),
        )


@extend_schema(tags=TAGS)
class ApprovalDetailView(APIView):
    permission_classes = [IsPrincipal]

    @extend_schema(
        summary="One approval item", responses={200: ApprovalItemSerializer, 404: PROBLEM}
    )
    def get(self, request, item_id):
        item = inbox.approval_item_for(principal=request.user, item_id=item_id)
        return Response(ApprovalItemSerializer(item).data)


DECIDE_RESPONSES = {
    200: ApprovalItemSerializer,
    400: PROBLEM,
    403: OpenApiResponse(description="problem+json `approval_decider_required`: agents, viewers"),
    404: PROBLEM,
    409: OpenApiResponse(
        description="problem+json `approval_already_decided` (with `item_status`, `decided_by`, "
        "`decided_at`) or `approval_expired`"
    ),
}


@extend_schema(tags=TAGS)
class ApprovalApproveView(APIView):
    permission_classes = [IsPrincipal]

    @extend_schema(
        summary="Approve a pending item (operator or above; first decision wins)",
        request=ApprovalApproveSerializer,
        responses=DECIDE_RESPONSES,
    )
    def post(self, request, item_id):
        ApprovalApproveSerializer(data=request.data or {}).is_valid(raise_exception=True)
        item = approval_decide(
            company=request.user.company, actor=request.user, item_id=item_id, decision=APPROVE
        )
        return Response(ApprovalItemSerializer(item).data)


@extend_schema(tags=TAGS)
class ApprovalRejectView(APIView):
    permission_classes = [IsPrincipal]

    @extend_schema(
        summary="Reject a pending item with a reason (operator or above)",
        request=ApprovalRejectSerializer,
        responses=DECIDE_RESPONSES,
    )
    def post(self, request, item_id):
        payload = ApprovalRejectSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        item = approval_decide(
            company=request.user.company,
            actor=request.user,
            item_id=item_id,
            decision=REJECT,
            reason=payload.validated_data["reason"],
        )
        return Response(ApprovalItemSerializer(item).data)


@extend_schema(tags=TAGS)
class ApprovalConsumeView(APIView):
    permission_classes = [IsPrincipal]

    @extend_schema(
        summary="Mark an approved item as applied (the requesting agent, once)",
        request=ApprovalApproveSerializer,
        responses={200: ApprovalItemSerializer, 403: PROBLEM, 404: PROBLEM, 409: PROBLEM},
    )
    def post(self, request, item_id):
        ApprovalApproveSerializer(data=request.data or {}).is_valid(raise_exception=True)
        principal = request.user
        if not principal.is_agent:
            raise AccessDeniedError(
                "Items are consumed by the agent that asked for them.", code="agents_only"
            )
        inbox.approval_item_for(principal=principal, item_id=item_id)
        item = approval_consume(company=principal.company, item_id=item_id, actor=principal)
        return Response(ApprovalItemSerializer(item).data)
