from django.urls import path

from persistence.api import views

urlpatterns = [
    path("me", views.MeView.as_view(), name="me"),
    path("agents", views.AgentListView.as_view(), name="agent-list"),
    path("agents/<int:pk>", views.AgentDetailView.as_view(), name="agent-detail"),
    path("company/config", views.CompanyConfigView.as_view(), name="company-config"),
]
