from django.urls import path

from memory.interfaces.api import views
from memory.interfaces.api.conversations.from_messages import MemoriesFromMessagesView
from memory.interfaces.api.views.subjects import SubjectEraseView, SubjectMemoriesView

urlpatterns = [
    path("memories", views.MemoryCollectionView.as_view(), name="memory-list"),
    path("memories/count", views.MemoryCountView.as_view(), name="memory-count"),
    path(
        "memories/from-messages",
        MemoriesFromMessagesView.as_view(),
        name="memory-from-messages",
    ),
    path("memories/search", views.MemorySearchView.as_view(), name="memory-search"),
    path("memories/context", views.MemoryContextView.as_view(), name="memory-context"),
    path("memories/<uuid:pk>", views.MemoryDetailView.as_view(), name="memory-detail"),
    path("memories/<uuid:pk>/history", views.MemoryHistoryView.as_view(), name="memory-history"),
    path("shared", views.SharedPublishView.as_view(), name="shared-publish"),
    path("shared/search", views.SharedSearchView.as_view(), name="shared-search"),
    path("shared/<uuid:pk>", views.SharedDetailView.as_view(), name="shared-detail"),
    path("sessions/<str:session_id>/end", views.SessionEndView.as_view(), name="session-end"),
    path(
        "subjects/<str:subject>/memories",
        SubjectMemoriesView.as_view(),
        name="subject-memories",
    ),
    path("subjects/<str:subject>/erase", SubjectEraseView.as_view(), name="subject-erase"),
]
