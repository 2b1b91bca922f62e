from django.urls import path

from memory.interfaces.console import activity, finetune, views

app_name = "memory_console"

urlpatterns = [
    path("", views.agents_view, name="agents"),
    path("shared", views.shared_view, name="shared"),
    path("shared/<uuid:memory_id>", views.shared_memory_view, name="shared-memory"),
    path("context-preview", activity.context_preview_view, name="context-preview"),
    path("requests", activity.request_log_view, name="request-log"),
    path("skill-evolver", views.evolver_runs_view, name="evolver-runs"),
    path(
        "skill-evolver/drafts/<uuid:draft_id>/requeue",
        views.evolver_draft_requeue_view,
        name="evolver-draft-requeue",
    ),
    path("fine-tune", finetune.fine_tune_view, name="fine-tune"),
    path("fine-tune/preflight", finetune.fine_tune_preflight_view, name="fine-tune-preflight"),
    path("fine-tune/runs", finetune.fine_tune_start_view, name="fine-tune-start"),
    path(
        "fine-tune/runs/<uuid:run_id>/resume",
        finetune.fine_tune_resume_view,
        name="fine-tune-resume",
    ),
    path(
        "fine-tune/runs/<uuid:run_id>/cancel",
        finetune.fine_tune_cancel_view,
        name="fine-tune-cancel",
    ),
    path("fine-tune/rollback", finetune.fine_tune_rollback_view, name="fine-tune-rollback"),
    path(
        "fine-tune/checkpoints/<uuid:checkpoint_id>/delete",
        finetune.fine_tune_checkpoint_delete_view,
        name="fine-tune-checkpoint-delete",
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
