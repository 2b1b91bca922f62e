from django.urls import path

from memory.interfaces.tools import views

urlpatterns = [
    path("memories/tools", views.ToolListView.as_view(), name="memory-tools"),
    path("memories/tools/call", views.ToolCallView.as_view(), name="memory-tool-call"),
]
