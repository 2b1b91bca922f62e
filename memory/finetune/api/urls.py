from django.urls import path

from memory.finetune.api import views

urlpatterns = [
    path("memory/fine-tune/preflight", views.PreflightView.as_view(), name="fine-tune-preflight"),
    path("memory/fine-tune/runs", views.RunCollectionView.as_view(), name="fine-tune-runs"),
    path("memory/fine-tune/runs/<uuid:pk>", views.RunDetailView.as_view(), name="fine-tune-run"),
    path(
        "memory/fine-tune/runs/<uuid:pk>/resume",
        views.RunResumeView.as_view(),
        name="fine-tune-run-resume",
    ),
    path(
        "memory/fine-tune/runs/<uuid:pk>/cancel",
        views.RunCancelView.as_view(),
        name="fine-tune-run-cancel",
    ),
    path(
        "memory/fine-tune/checkpoints",
        views.CheckpointCollectionView.as_view(),
        name="fine-tune-checkpoints",
    ),
    path(
        "memory/fine-tune/checkpoints/<uuid:pk>",
        views.CheckpointDetailView.as_view(),
        name="fine-tune-checkpoint",
    ),
    path("memory/fine-tune/rollback", views.RollbackView.as_view(), name="fine-tune-rollback"),
    path("memory/fine-tune/active", views.ActiveEmbedderView.as_view(), name="fine-tune-active"),
]
