from django.urls import path

from orgmemory.api import approval_views as views

urlpatterns = [
    path("approvals", views.ApprovalListView.as_view(), name="approval-list"),
    path("approvals/<uuid:item_id>", views.ApprovalDetailView.as_view(), name="approval-detail"),
    path(
        "approvals/<uuid:item_id>/approve",
        views.ApprovalApproveView.as_view(),
        name="approval-approve",
    ),
    path(
        "approvals/<uuid:item_id>/reject",
        views.ApprovalRejectView.as_view(),
        name="approval-reject",
    ),
    path(
        "approvals/<uuid:item_id>/consume",
        views.ApprovalConsumeView.as_view(),
        name="approval-consume",
    ),
]
