from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from synthorg.health import healthz
from synthorg.landing import landing

api_v1 = [
    path("", include("persistence.api.urls")),
    path("org/", include("orgmemory.api.urls")),
    path("", include("orgmemory.api.approval_urls")),
    path("", include("memory.interfaces.tools.urls")),
    path("", include("memory.interfaces.api.urls")),
    path("", include("memory.interfaces.api.archive_urls")),
    path("", include("memory.interfaces.api.procedural.urls")),
    path("", include("memory.interfaces.api.conversations.urls")),
    path("", include("memory.finetune.api.urls")),  # the leaf app: named, never imported
]

admin.site.site_url = "/console/"  # the admin header's "View site" opens the console

# Swagger UI under the site's Content-Security-Policy: the split view serves its start-up
# script as a same-origin file (no inline script); the page and the UI itself set inline
# styles, which this one page allows (settings.CONTENT_SECURITY_POLICY).
api_docs = csp_update({"style-src": ["'unsafe-inline'"]})(
    SpectacularSwaggerSplitView.as_view(url_name="api-schema")
)

urlpatterns = [
    path("", landing, name="landing"),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", api_docs, name="api-docs"),
    path("api/v1/", include((api_v1, "api"), namespace="v1")),
    path("", include("persistence.dashboard.urls")),
    path("console/", include("persistence.console.urls")),
    path("console/inbox/", include("orgmemory.console.urls")),
    path("console/policies/", include("orgmemory.console.policies_urls")),
    path("console/facts/", include("orgmemory.console.facts_urls")),
    path("console/memories/", include("memory.interfaces.console.urls")),
    path("console/agents/", include("memory.interfaces.console.agents_urls")),
    path("console/memories/", include("memory.finetune.console.urls")),  # leaf app, by name
]

# An exception no view caught (a middleware's, after the view): a database that went away is
# a 503 with Retry-After here too, anything else Django's 500 (synthorg.db.unavailable).
handler500 = "synthorg.db.unavailable.server_error"
