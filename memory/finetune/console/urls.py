from django.urls import path

from memory.finetune.console import views

app_name = "finetune_console"

urlpatterns = [
    path("fine-tune", views.fine_tune_view, name="fine-tune"),
    path("fine-tune/preflight", views.fine_tune_preflight_view, name="fine-tune-preflight"),
    path("fine-tune/runs", views.fine_tune_start_view, name="fine-tune-start"),
    path(
        "fine-tune/runs/<uuid:run_id>/resume",
        views.fine_tune_resume_view,
        name="fine-tune-resume",
    ),
    path(
        "fine-tune/runs/<uuid:run_id>/cancel",
        views.fine_tune_cancel_view,
        name="fine-tune-cancel",
    ),
    path("fine-tune/rollback", views.fine_tune_rollback_view, name="fine-tune-rollback"),
    path(
        "fine-tune/checkpoints/<uuid:checkpoint_id>/delete",
        views.fine_tune_checkpoint_delete_view,
        name="fine-tune-checkpoint-delete",
    ),
]
