from django.urls import path

from persistence.dashboard.views import cost_dashboard

urlpatterns = [
    path("dashboard/costs", cost_dashboard, name="cost-dashboard"),
]
