from django.urls import path

from memory.interfaces.console import activity, views

app_name = "memory_console"

urlpatterns = [
    path("", views.agents_view, name="agents"),
    path("shared", views.shared_view, name="shared"),
    path("shared/<uuid:memory_id>", views.shared_memory_view, name="shared-memory"),
    path("context-preview", activity.context_preview_view, name="context-preview"),
    path("requests", activity.request_log_view, name="request-log"),
    path("skill-evolver", views.evolver_runs_view, name="evolver-runs"),
    path("skill-evolver/org-skills", views.org_skill_add_view, name="org-skill-add"),
    path(
        "skill-evolver/drafts/<uuid:draft_id>/requeue",
        views.evolver_draft_requeue_view,
        name="evolver-draft-requeue",
    ),
    path("executions", views.executions_view, name="executions"),
    path("wiki.zip", views.wiki_zip_view, name="wiki-zip"),
    path("executions/compress", views.experiences_compress_view, name="experiences-compress"),
    path("executions/wiki", views.wiki_export_view, name="wiki-export"),
    path("executions/<uuid:report_id>", views.execution_view, name="execution"),
    path(
        "executions/<uuid:report_id>/requeue",
        views.execution_requeue_view,
        name="execution-requeue",
    ),
    path("agents/<int:agent_id>", views.agent_memories_view, name="agent"),
    path("agents/<int:agent_id>/<uuid:memory_id>", views.memory_view, name="memory"),
    path(
        "agents/<int:agent_id>/<uuid:memory_id>/delete",
        views.memory_delete_view,
        name="memory-delete",
    ),
    path(
        "agents/<int:agent_id>/<uuid:memory_id>/correct",
        views.memory_correct_view,
        name="memory-correct",
    ),
]
