from django.urls import path
from rest_framework.routers import SimpleRouter

from persistence.api import operational_views as ops
from persistence.api import portability_views as portability
from persistence.api import views

router = SimpleRouter(trailing_slash=False)
router.register("tasks", ops.TaskViewSet, basename="task")
router.register("costs", ops.CostRecordViewSet, basename="cost")
router.register("messages", ops.MessageViewSet, basename="message")
router.register("audit", ops.AuditEntryViewSet, basename="audit")
router.register("parked-contexts", ops.ParkedContextViewSet, basename="parked-context")
router.register("heartbeats", ops.HeartbeatViewSet, basename="heartbeat")
router.register("lifecycle-events", ops.LifecycleEventViewSet, basename="lifecycle-event")
router.register("checkpoints", ops.CheckpointViewSet, basename="checkpoint")
router.register("task-metrics", ops.TaskMetricViewSet, basename="task-metric")
router.register(
    "collaboration-metrics", ops.CollaborationMetricViewSet, basename="collaboration-metric"
)
router.register("artifacts", ops.ArtifactViewSet, basename="artifact")
router.register("projects", ops.ProjectViewSet, basename="project")
router.register("personality-presets", ops.PresetViewSet, basename="personality-preset")

urlpatterns = [
    path("me", views.MeView.as_view(), name="me"),
    path("agents", views.AgentListView.as_view(), name="agent-list"),
    path("agents/<int:pk>", views.AgentDetailView.as_view(), name="agent-detail"),
    path("agents/<int:pk>/erase", portability.AgentEraseView.as_view(), name="agent-erase"),
    path("export", portability.ContentExportView.as_view(), name="content-export"),
    path("import", portability.ContentImportView.as_view(), name="content-import"),
    path("company/config", views.CompanyConfigView.as_view(), name="company-config"),
    path("costs/summary", ops.CostSummaryView.as_view(), name="cost-summary"),
    path("costs/budget", ops.CostBudgetView.as_view(), name="cost-budget"),
    path("messages/history", ops.MessageHistoryView.as_view(), name="message-history"),
    path("runtime-states", ops.RuntimeStateListView.as_view(), name="runtime-state-list"),
    path(
        "runtime-states/<int:agent_id>",
        ops.RuntimeStateDetailView.as_view(),
        name="runtime-state-detail",
    ),
    path("settings", ops.SettingListView.as_view(), name="setting-list"),
    path(
        "settings/<str:namespace>/<str:key>",
        ops.SettingDetailView.as_view(),
        name="setting-detail",
    ),
    *router.urls,
]
