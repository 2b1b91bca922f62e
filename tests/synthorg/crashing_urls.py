"""The project's URLs plus views that fail with a bug, for the 500 handler tests."""

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from synthorg.urls import urlpatterns as project_urlpatterns


class CrashView(APIView):
    @extend_schema(exclude=True)
    def get(self, request):
        return 1 / 0


def crash(request):
    return 1 / 0


urlpatterns = [
    path("api/v1/crash", CrashView.as_view()),
    path("crash", crash),
    *project_urlpatterns,
]
