from django.contrib.auth import views as auth_views
from django.urls import path

from persistence.console import config, jobs, views

app_name = "console"

urlpatterns = [
    path("", views.home, name="home"),
    path("login", views.ConsoleLoginView.as_view(), name="login"),
    path("logout", auth_views.LogoutView.as_view(next_page="console:login"), name="logout"),
    path("company", views.switch_company, name="switch-company"),
    path("company/config", config.company_config_view, name="company-config"),
    path("failures", jobs.failures_view, name="failures"),
    path(
        "failures/<str:kind>/<str:job_id>/requeue",
        jobs.failure_requeue_view,
        name="failure-requeue",
    ),
]
