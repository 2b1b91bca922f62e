from django.urls import path

from memory.interfaces.api import archive_views as views

urlpatterns = [
    path("archive/search", views.ArchiveSearchView.as_view(), name="archive-search"),
    path("archive/<uuid:pk>/restore", views.ArchiveRestoreView.as_view(), name="archive-restore"),
]
