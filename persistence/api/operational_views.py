"""REST endpoints for operational data. Thin: validate → call the service with the
authenticated principal → serialize. Every queryset starts from the caller's company, so
another company's object is a 404 whatever the method."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from persistence.api import filters
from persistence.api import operational_serializers as s
from persistence.models import (
    AgentRuntimeState,
    Artifact,
    AuditEntry,
    Checkpoint,
    CollaborationMetric,
    CostRecord,
    Heartbeat,
    LifecycleEvent,
    Message,
    ParkedContext,
    PersonalityPreset,
    Project,
    Setting,
    Task,
    TaskMetric,
)
from persistence.selectors import costs as cost_selectors
from persistence.selectors import operations as ops
from persistence.selectors.agents import agents_for_company
from persistence.services import (
    artifacts,
    audit,
    costs,
    messaging,
    metrics,
    presets,
    projects,
    runtime,
    settings,
    tasks,
)
from synthorg.api.pagination import StableCursorPagination, StablePageNumberPagination


class CreatedCursorPagination(StableCursorPagination):
    ordering = ("-created_at", "-id")


class OccurredCursorPagination(StableCursorPagination):
    ordering = ("-occurred_at", "-id")


class CompanyViewSet(viewsets.GenericViewSet):
    """Base: a company-scoped queryset from a selector (``list_selector(principal)``)."""

    lookup_value_regex = r"\d+"
    pagination_class = CreatedCursorPagination
    object_kw = "obj"

    def list_selector(self, principal):
        raise NotImplementedError

    def get_queryset(self):
        return self.list_selector(self.request.user)


class ServiceCreateMixin:
    """POST: validate, then ``create_service(principal=..., **validated_data)``."""

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        obj = type(self).create_service(principal=request.user, **serializer.validated_data)
        return Response(self.get_serializer(obj).data, status=status.HTTP_201_CREATED)


class ServiceUpdateMixin:
    """PATCH: ``update_service(principal=..., <object_kw>=obj, **validated_data)``."""

    def partial_update(self, request, *args, **kwargs):
        obj = self.get_object()
        serializer = self.get_serializer(obj, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        obj = type(self).update_service(
            principal=request.user, **{self.object_kw: obj}, **serializer.validated_data
        )
        return Response(self.get_serializer(obj).data)


class ServiceDestroyMixin:
    """DELETE: ``delete_service(principal=..., <object_kw>=obj)``."""

    def destroy(self, request, *args, **kwargs):
        obj = self.get_object()
        type(self).delete_service(principal=request.user, **{self.object_kw: obj})
        return Response(status=status.HTTP_204_NO_CONTENT)


class LedgerViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, ServiceCreateMixin, CompanyViewSet
):
    """Create + read: records are never changed through the API."""


class MutableViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    ServiceCreateMixin,
    ServiceUpdateMixin,
    ServiceDestroyMixin,
    CompanyViewSet,
):
    pass


def _docs(tag: str, noun: str, *, ledger: bool = False, extra: dict | None = None):
    views = {
        "list": extend_schema(summary=f"List {noun}s (filtered, paginated)"),
        "retrieve": extend_schema(summary=f"One {noun}"),
        "create": extend_schema(summary=f"Create a {noun}"),
    }
    if not ledger:
        views["partial_update"] = extend_schema(summary=f"Change a {noun}")
        views["destroy"] = extend_schema(summary=f"Delete a {noun}")
    views.update(extra or {})
    return lambda cls: extend_schema(tags=[tag])(extend_schema_view(**views)(cls))


@_docs("tasks", "task")
class TaskViewSet(MutableViewSet):
    queryset = Task.objects.none()
    serializer_class = s.TaskSerializer
    filterset_class = filters.TaskFilter
    object_kw = "task"
    create_service = staticmethod(tasks.task_create)
    update_service = staticmethod(tasks.task_update)
    delete_service = staticmethod(tasks.task_delete)

    def list_selector(self, principal):
        return ops.tasks_list(principal.company)


@_docs("costs", "cost record", ledger=True)
class CostRecordViewSet(LedgerViewSet):
    queryset = CostRecord.objects.none()
    serializer_class = s.CostRecordSerializer
    filterset_class = filters.CostRecordFilter
    pagination_class = OccurredCursorPagination
    create_service = staticmethod(costs.cost_record_submit)

    def list_selector(self, principal):
        return cost_selectors.cost_records_list(principal.company)


@_docs("messages", "message", ledger=True)
class MessageViewSet(LedgerViewSet):
    queryset = Message.objects.none()
    serializer_class = s.MessageSerializer
    filterset_class = filters.MessageFilter
    create_service = staticmethod(messaging.message_send)

    def list_selector(self, principal):
        return ops.messages_list(principal.company)


@_docs("audit", "audit entry", ledger=True)
class AuditEntryViewSet(LedgerViewSet):
    queryset = AuditEntry.objects.none()
    serializer_class = s.AuditEntrySerializer
    filterset_class = filters.AuditEntryFilter
    create_service = staticmethod(audit.audit_entry_submit)

    def list_selector(self, principal):
        return ops.audit_entries_visible_to(principal)


@_docs(
    "runtime",
    "parked context",
    extra={
        "partial_update": extend_schema(
            summary="Resume a parked context",
            request=s.ParkedContextUpdateSerializer,
            responses=s.ParkedContextSerializer,
        )
    },
)
class ParkedContextViewSet(MutableViewSet):
    queryset = ParkedContext.objects.none()
    serializer_class = s.ParkedContextSerializer
    filterset_class = filters.ParkedContextFilter
    object_kw = "parked"
    create_service = staticmethod(runtime.parked_context_park)
    delete_service = staticmethod(runtime.parked_context_delete)

    def list_selector(self, principal):
        return ops.parked_contexts_list(principal.company)

    def partial_update(self, request, *args, **kwargs):
        parked = self.get_object()
        s.ParkedContextUpdateSerializer(data=request.data).is_valid(raise_exception=True)
        parked = runtime.parked_context_resume(principal=request.user, parked=parked)
        return Response(self.get_serializer(parked).data)


@_docs("runtime", "heartbeat", ledger=True)
class HeartbeatViewSet(LedgerViewSet):
    queryset = Heartbeat.objects.none()
    serializer_class = s.HeartbeatSerializer
    filterset_class = filters.HeartbeatFilter
    create_service = staticmethod(runtime.heartbeat_record)

    def list_selector(self, principal):
        return ops.heartbeats_list(principal.company)


@_docs("runtime", "lifecycle event", ledger=True)
class LifecycleEventViewSet(LedgerViewSet):
    queryset = LifecycleEvent.objects.none()
    serializer_class = s.LifecycleEventSerializer
    filterset_class = filters.LifecycleEventFilter
    create_service = staticmethod(runtime.lifecycle_event_record)

    def list_selector(self, principal):
        return ops.lifecycle_events_list(principal.company)


@_docs(
    "runtime",
    "checkpoint",
    extra={"destroy": extend_schema(summary="Delete a checkpoint")},
    ledger=True,
)
class CheckpointViewSet(ServiceDestroyMixin, LedgerViewSet):
    queryset = Checkpoint.objects.none()
    serializer_class = s.CheckpointSerializer
    filterset_class = filters.CheckpointFilter
    object_kw = "checkpoint"
    create_service = staticmethod(runtime.checkpoint_save)
    delete_service = staticmethod(runtime.checkpoint_delete)

    def list_selector(self, principal):
        return ops.checkpoints_list(principal.company)


@_docs("metrics", "task metric", ledger=True)
class TaskMetricViewSet(LedgerViewSet):
    queryset = TaskMetric.objects.none()
    serializer_class = s.TaskMetricSerializer
    filterset_class = filters.TaskMetricFilter
    create_service = staticmethod(metrics.task_metric_record)

    def list_selector(self, principal):
        return ops.task_metrics_list(principal.company)


@_docs("metrics", "collaboration metric", ledger=True)
class CollaborationMetricViewSet(LedgerViewSet):
    queryset = CollaborationMetric.objects.none()
    serializer_class = s.CollaborationMetricSerializer
    filterset_class = filters.CollaborationMetricFilter
    create_service = staticmethod(metrics.collaboration_metric_record)

    def list_selector(self, principal):
        return ops.collaboration_metrics_list(principal.company)


@_docs("artifacts", "artifact")
class ArtifactViewSet(MutableViewSet):
    queryset = Artifact.objects.none()
    serializer_class = s.ArtifactSerializer
    filterset_class = filters.ArtifactFilter
    object_kw = "artifact"
    create_service = staticmethod(artifacts.artifact_create)
    update_service = staticmethod(artifacts.artifact_update)
    delete_service = staticmethod(artifacts.artifact_delete)

    def list_selector(self, principal):
        return ops.artifacts_list(principal.company)


@_docs("projects", "project")
class ProjectViewSet(MutableViewSet):
    queryset = Project.objects.none()
    serializer_class = s.ProjectSerializer
    filterset_class = filters.ProjectFilter
    pagination_class = StablePageNumberPagination
    object_kw = "project"
    update_service = staticmethod(projects.project_update)
    delete_service = staticmethod(projects.project_delete)

    @staticmethod
    def create_service(*, principal, **fields):
        return projects.project_create(company=principal.company, principal=principal, **fields)

    def list_selector(self, principal):
        return ops.projects_list(principal.company)


@_docs("presets", "personality preset")
class PresetViewSet(MutableViewSet):
    queryset = PersonalityPreset.objects.none()
    serializer_class = s.PresetSerializer
    filterset_class = filters.PresetFilter
    pagination_class = StablePageNumberPagination
    object_kw = "preset"
    create_service = staticmethod(presets.preset_create)
    update_service = staticmethod(presets.preset_update)
    delete_service = staticmethod(presets.preset_delete)

    def list_selector(self, principal):
        return ops.presets_list(principal.company)


# Runtime state (one per agent, addressed by agent id) -------------------------------


@extend_schema(tags=["runtime"], summary="Runtime state of the company's agents")
class RuntimeStateListView(ListAPIView):
    queryset = AgentRuntimeState.objects.none()
    serializer_class = s.RuntimeStateSerializer
    filterset_class = filters.RuntimeStateFilter
    pagination_class = StablePageNumberPagination

    def get_queryset(self):
        return ops.runtime_states_list(self.request.user.company)


@extend_schema(tags=["runtime"])
class RuntimeStateDetailView(APIView):
    serializer_class = s.RuntimeStateSerializer

    def _agent(self, request, agent_id):
        agent = agents_for_company(request.user.company).filter(pk=agent_id).first()
        if agent is None:
            raise Http404
        return agent

    @extend_schema(summary="One agent's runtime state", responses=s.RuntimeStateSerializer)
    def get(self, request, agent_id: int):
        agent = self._agent(request, agent_id)
        state = ops.runtime_state_for_agent(request.user.company, agent)
        if state is None:
            raise Http404
        return Response(s.RuntimeStateSerializer(state, context={"request": request}).data)

    @extend_schema(
        summary="Set an agent's runtime state (an agent sets its own)",
        request=s.RuntimeStateSerializer,
        responses=s.RuntimeStateSerializer,
    )
    def put(self, request, agent_id: int):
        agent = self._agent(request, agent_id)
        serializer = s.RuntimeStateSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        state = runtime.runtime_state_set(
            principal=request.user, agent=agent, **serializer.validated_data
        )
        return Response(s.RuntimeStateSerializer(state, context={"request": request}).data)


# Settings (namespace + key) -----------------------------------------------------------


@extend_schema(tags=["settings"], summary="Company settings")
class SettingListView(ListAPIView):
    queryset = Setting.objects.none()
    serializer_class = s.SettingSerializer
    filterset_class = filters.SettingFilter
    pagination_class = StablePageNumberPagination

    def get_queryset(self):
        return ops.settings_list(self.request.user.company)


@extend_schema(tags=["settings"])
class SettingDetailView(APIView):
    serializer_class = s.SettingSerializer

    def _get(self, request, namespace, key):
        setting = ops.setting_get(request.user.company, namespace, key)
        if setting is None:
            raise Http404
        return setting

    @extend_schema(summary="One setting", responses=s.SettingSerializer)
    def get(self, request, namespace: str, key: str):
        return Response(s.SettingSerializer(self._get(request, namespace, key)).data)

    @extend_schema(
        summary="Create or replace a setting (company admins)",
        request=s.SettingValueSerializer,
        responses=s.SettingSerializer,
    )
    def put(self, request, namespace: str, key: str):
        serializer = s.SettingValueSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        setting = settings.setting_set(
            principal=request.user,
            namespace=namespace,
            key=key,
            value=serializer.validated_data["value"],
        )
        return Response(s.SettingSerializer(setting).data)

    @extend_schema(summary="Delete a setting (company admins)", responses={204: None})
    def delete(self, request, namespace: str, key: str):
        settings.setting_delete(principal=request.user, setting=self._get(request, namespace, key))
        return Response(status=status.HTTP_204_NO_CONTENT)


# Cost summary, budget and message history ---------------------------------------------


@extend_schema(tags=["costs"])
class CostSummaryView(APIView):
    @extend_schema(
        summary="Cost sums per agent, task, model or UTC day",
        description=(
            "Exact decimal sums per currency over `[from, to)` (ISO-8601 datetimes). "
            "`group_by=day` lists every day of the range, with empty totals for days "
            "without records."
        ),
        parameters=[
            OpenApiParameter("group_by", str, enum=["agent", "task", "model", "day"]),
            OpenApiParameter("from", str, required=False, description="inclusive, ISO-8601"),
            OpenApiParameter("to", str, required=False, description="exclusive, ISO-8601"),
        ],
        responses=s.CostSummarySerializer,
    )
    def get(self, request):
        query = s.CostSummaryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        summary = cost_selectors.cost_summary(request.user.company, **query.validated_data)
        return Response(s.CostSummarySerializer(summary).data)


@extend_schema(tags=["costs"])
class CostBudgetView(APIView):
    @extend_schema(
        summary="This month's spend against the company's monthly budget",
        description=(
            "The budget is the setting `budget`/`monthly_limit` "
            '(`{"amount": "250.00", "currency": "USD", "alert_threshold": "0.8"}`).'
        ),
        parameters=[OpenApiParameter("month", str, required=False, description="YYYY-MM")],
        responses=s.BudgetStatusSerializer,
    )
    def get(self, request):
        query = s.BudgetQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        budget = cost_selectors.budget_status(
            request.user.company, month=query.validated_data.get("month")
        )
        return Response(s.BudgetStatusSerializer(budget).data)


@extend_schema(tags=["messages"])
class MessageHistoryView(APIView):
    @extend_schema(
        summary="A channel's history, oldest first (the newest `limit` messages)",
        parameters=[
            OpenApiParameter("channel", str),
            OpenApiParameter("limit", int, required=False),
        ],
        responses=s.MessageSerializer(many=True),
    )
    def get(self, request):
        query = s.MessageHistoryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        history = ops.message_history(
            request.user.company,
            query.validated_data["channel"],
            limit=query.validated_data.get("limit", 100),
        )
        return Response(s.MessageSerializer(history, many=True).data)
