from django.urls import path

from memory.interfaces.console import agents

app_name = "agents_console"

urlpatterns = [
    path("", agents.agents_view, name="list"),
    path("subjects/erase", agents.subject_erase_view, name="subject-erase"),
    path("<int:agent_id>", agents.agent_view, name="agent"),
    path("<int:agent_id>/profile", agents.agent_profile_view, name="profile"),
    path("<int:agent_id>/keys", agents.key_create_view, name="key-create"),
    path("<int:agent_id>/keys/<int:key_id>/revoke", agents.key_revoke_view, name="key-revoke"),
]
