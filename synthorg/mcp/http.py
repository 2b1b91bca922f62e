"""Streamable HTTP transport of the MCP server, with agent API-key authentication.

:func:`mcp_http_app` returns an ASGI app serving ``/mcp`` (and ``/mcp/``): a request without
a valid ``Authorization: Bearer <agent API key>`` gets ``401`` problem+json with
``WWW-Authenticate: Bearer`` before the SDK sees it (``503`` ``database_unavailable`` with
``Retry-After`` while the database cannot be asked); to an MCP client — it accepts an event
stream — either problem comes as a JSON-RPC error, so the client shows its code and detail.
Otherwise the agent's principal is put in the ASGI scope, where each tool call reads it from
the SDK's request context. Stateless (every POST stands alone, JSON responses), so any web
worker can answer any request and no session needs to stick to a process.
"""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.transport_security import TransportSecuritySettings

from synthorg.db.unavailable import is_database_unavailable, log_unavailable, unavailable_problem
from synthorg.errors import AccessDeniedError
from synthorg.mcp.auth import KeyRejected, principal_for_key
from synthorg.mcp.server import build_server

SCOPE_KEY = "synthorg.principal"
MCP_PATH = "/mcp"
NOT_AUTHENTICATED = "Send the agent's API key as 'Authorization: Bearer <key>'."
NO_PRINCIPAL = "The MCP request carries no authenticated agent."
#: JSON-RPC's implementation-defined server error range: what our 401 and 503 map to for
#: MCP clients
JSONRPC_UNAUTHORIZED = -32001
JSONRPC_UNAVAILABLE = -32002


def _principal_from_context(ctx):
    request = getattr(ctx, "request", None)
    principal = request.scope.get(SCOPE_KEY) if request is not None else None
    if principal is None:  # unreachable behind the middleware; refuse rather than guess
        raise AccessDeniedError(NO_PRINCIPAL, code="not_authenticated")
    return principal


def _authenticate(header: str):
    close_old_connections()
    try:
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "bearer":
            return None, ("malformed_credentials", NOT_AUTHENTICATED)
        principal = principal_for_key(parts[1])
        if isinstance(principal, KeyRejected):
            return None, (principal.code, principal.message)
        return principal, None
    finally:
        close_old_connections()


def _speaks_mcp(headers: dict) -> bool:
    """An MCP client (streamable HTTP) accepts an event stream: it reads an error only as a
    JSON-RPC error in an ``application/json`` body, and shows anything else as "Server
    returned an error response"."""
    return b"text/event-stream" in headers.get(b"accept", b"").lower()


def _jsonrpc_error(problem: dict, *, code: int = JSONRPC_UNAUTHORIZED) -> dict:
    """The problem as a JSON-RPC error (what an MCP client shows: ``message``), the problem
    itself in ``error.data`` and at the top level too, for HTTP clients that read it there."""
    message = f"{problem['title']} ({problem['code']}): {problem['detail']}"
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": code, "message": message, "data": problem},
        **problem,
    }


async def _respond(
    send, status: int, body: dict, headers=(), content_type: bytes = b"application/problem+json"
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _problem(status: int, code: str, title: str, detail: str) -> dict:
    return {
        "type": "https://synthorg.dev/problems/" + code,
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "errors": [],
    }


class AgentKeyMiddleware:
    """Authenticates every HTTP request to the MCP endpoint by agent API key."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        domain, _port = split_domain_port(host)
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            detail = f"Invalid Host header {host!r} (see ALLOWED_HOSTS)."
            await _respond(send, 400, _problem(400, "disallowed_host", "Bad request", detail))
            return
        header = headers.get(b"authorization", b"").decode("latin-1")
        if not header:
            principal, problem = None, ("not_authenticated", NOT_AUTHENTICATED)
        else:
            try:
                principal, problem = await sync_to_async(_authenticate, thread_sensitive=False)(
                    header
                )
            except Exception as exc:
                if not is_database_unavailable(exc):
                    raise
                body = unavailable_problem(log_unavailable("MCP authentication", exc))
                retry_after = str(body["retry_after"]).encode()
                content_type = b"application/problem+json"
                if _speaks_mcp(headers):
                    body = _jsonrpc_error(body, code=JSONRPC_UNAVAILABLE)
                    content_type = b"application/json"
                await _respond(
                    send,
                    503,
                    body,
                    headers=[(b"retry-after", retry_after)],
                    content_type=content_type,
                )
                return
        if principal is None:
            code, detail = problem
            body = _problem(401, code, "Not authenticated", detail)
            content_type = b"application/problem+json"
            if _speaks_mcp(headers):
                body, content_type = _jsonrpc_error(body), b"application/json"
            await _respond(
                send,
                401,
                body,
                headers=[(b"www-authenticate", b'Bearer realm="synthorg"')],
                content_type=content_type,
            )
            return
        scope = {**scope, SCOPE_KEY: principal, "path": MCP_PATH, "raw_path": MCP_PATH.encode()}
        await self.app(scope, receive, send)


def mcp_http_app():
    """The Starlette app of the SDK (stateless streamable HTTP) behind key authentication.

    Forward the ASGI ``lifespan`` to it: its lifespan runs the SDK's session manager.
    """
    server = build_server(_principal_from_context, via="mcp")
    starlette_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        # Host is checked against ALLOWED_HOSTS above; a bearer key (never a cookie) is
        # the credential, so a DNS-rebound browser page has nothing to ride on.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return starlette_app, AgentKeyMiddleware(starlette_app)
