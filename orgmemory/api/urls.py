from django.urls import path

from orgmemory.api import views

urlpatterns = [
    path("policies", views.PolicyListView.as_view(), name="org-policies"),
    path("facts", views.FactListView.as_view(), name="org-facts"),
    path("facts/query", views.FactQueryView.as_view(), name="org-fact-query"),
    path("facts/<uuid:fact_id>", views.FactDetailView.as_view(), name="org-fact-detail"),
    path("facts/<uuid:fact_id>/retract", views.FactRetractView.as_view(), name="org-fact-retract"),
    path("facts/<uuid:fact_id>/history", views.FactHistoryView.as_view(), name="org-fact-history"),
    path("write-requests", views.WriteRequestListView.as_view(), name="org-write-requests"),
    path(
        "write-requests/<uuid:request_id>",
        views.WriteRequestDetailView.as_view(),
        name="org-write-request-detail",
    ),
    path(
        "write-requests/<uuid:request_id>/decide",
        views.WriteRequestDecideView.as_view(),
        name="org-write-request-decide",
    ),
]
