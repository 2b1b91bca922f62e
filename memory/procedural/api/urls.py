from django.urls import path

from memory.procedural.api import views

urlpatterns = [
    path("executions", views.ExecutionReportCollectionView.as_view(), name="execution-list"),
    path(
        "executions/<uuid:pk>",
        views.ExecutionReportDetailView.as_view(),
        name="execution-detail",
    ),
]
