"""The ASGI entry point: the MCP server at ``/mcp/`` and Django for everything else.

``application`` routes ``/mcp`` and ``/mcp/`` to the MCP SDK's streamable-HTTP app (behind
agent-key authentication, :mod:`synthorg.mcp.http`) and every other request to Django's
WSGI application run in a pool of ``WEB_THREADS`` threads (a2wsgi). Django's own ASGI
handler runs all synchronous views of a process on one thread, which is slower for this
API (the embedder releases the GIL inside onnxruntime, so threads overlap; measured:
docs/benchmarks/http.md#per-request-levers-measured-by-hand). ``native_application`` is the
same router over Django's ASGI handler, kept for that comparison (``bench/http_load.py``).

The ASGI ``lifespan`` is forwarded to the MCP app (it starts the SDK's session manager).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")

import django

django.setup()

from a2wsgi import WSGIMiddleware  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

from synthorg.mcp.http import MCP_PATH, mcp_http_app  # noqa: E402


def web_threads() -> int:
    return max(1, int(os.environ.get("WEB_THREADS", "8")))


class Router:
    """``/mcp`` → the MCP app; anything else → ``django_app``; lifespan → the MCP app."""

    def __init__(self, django_app) -> None:
        self.django_app = django_app
        self.mcp_lifespan_app, self.mcp_app = mcp_http_app()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self.mcp_lifespan_app(scope, receive, send)
        elif scope["type"] == "http" and scope["path"] in (MCP_PATH, MCP_PATH + "/"):
            await self.mcp_app(scope, receive, send)
        else:
            await self.django_app(scope, receive, send)


# django-stubs types WSGIHandler's return as HttpResponseBase; what it returns iterates bytes.
application = Router(WSGIMiddleware(get_wsgi_application(), workers=web_threads()))  # type: ignore[arg-type]


def native_application():
    """The router over Django's ASGI handler (for the serving-model benchmark)."""
    return Router(get_asgi_application())
