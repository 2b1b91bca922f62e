from django.urls import path

from memory.interfaces.api.conversations import views

urlpatterns = [
    path("conversations", views.ConversationListView.as_view(), name="conversation-list"),
    path(
        "conversations/<str:conversation_id>",
        views.ConversationDetailView.as_view(),
        name="conversation-detail",
    ),
    path(
        "conversations/<str:conversation_id>/messages",
        views.ConversationMessagesView.as_view(),
        name="conversation-messages",
    ),
    path(
        "conversations/<str:conversation_id>/messages/last",
        views.ConversationLastMessageView.as_view(),
        name="conversation-message-last",
    ),
    path(
        "conversations/<str:conversation_id>/extractions",
        views.ExtractionRunListView.as_view(),
        name="conversation-extractions",
    ),
    path(
        "conversations/<str:conversation_id>/extractions/<uuid:run_id>",
        views.ExtractionRunDetailView.as_view(),
        name="conversation-extraction-detail",
    ),
    path(
        "conversations/<str:conversation_id>/context",
        views.ConversationContextView.as_view(),
        name="conversation-context",
    ),
    path("journal", views.JournalListView.as_view(), name="journal-list"),
    path("journal/<str:day>", views.JournalDayView.as_view(), name="journal-day"),
    path("dreams", views.DreamRunListView.as_view(), name="dream-list"),
    path(
        "dreams/requests/<uuid:request_id>",
        views.DreamRequestDetailView.as_view(),
        name="dream-request-detail",
    ),
]
