from django.urls import path

from memory.interfaces.api.procedural import compression, views

urlpatterns = [
    path("executions", views.ExecutionReportCollectionView.as_view(), name="execution-list"),
    path(
        "executions/<uuid:pk>",
        views.ExecutionReportDetailView.as_view(),
        name="execution-detail",
    ),
    path("memories/<uuid:pk>/applied", views.LessonAppliedView.as_view(), name="lesson-applied"),
    path("memories/<uuid:pk>/skill.md", views.LessonSkillMdView.as_view(), name="lesson-skill-md"),
    path("org-skills", views.OrgSkillListView.as_view(), name="org-skill-list"),
    path(
        "org-skills/<uuid:pk>/applied",
        views.OrgSkillAppliedView.as_view(),
        name="org-skill-applied",
    ),
    path(
        "experiences/compress",
        compression.CompressionRunView.as_view(),
        name="experience-compress",
    ),
    path("experiences", compression.CompressedExperienceListView.as_view(), name="experiences"),
    path("experiences/wiki", compression.WikiExportView.as_view(), name="wiki-export"),
    path("experiences/wiki.zip", compression.WikiArchiveView.as_view(), name="wiki-archive"),
]
