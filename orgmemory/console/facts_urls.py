from django.urls import path

from orgmemory.console import facts

app_name = "facts_console"

urlpatterns = [
    path("", facts.facts_view, name="list"),
    path("<uuid:fact_id>", facts.fact_view, name="fact"),
]
