from django.urls import path

from orgmemory.console import policies

app_name = "policies_console"

urlpatterns = [
    path("", policies.policies_view, name="list"),
    path("change", policies.policy_change_view, name="change"),
    path("<uuid:fact_id>/history", policies.policy_history_view, name="history"),
]
