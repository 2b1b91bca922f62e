from django.urls import path

from orgmemory.console import views

app_name = "approvals_console"

urlpatterns = [
    path("", views.inbox_view, name="inbox"),
    path("items/<uuid:item_id>", views.item_view, name="item"),
    path("items/<uuid:item_id>/decide", views.item_decide, name="item-decide"),
    path("write-requests/<uuid:request_id>", views.write_request_view, name="write-request"),
    path(
        "write-requests/<uuid:request_id>/decide",
        views.write_request_decide_view,
        name="write-request-decide",
    ),
]
