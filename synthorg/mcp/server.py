"""The MCP server over the SDK's low-level :class:`mcp.server.Server`.

``tools/list`` lists every registered tool (name, description, JSON Schema, a destructive
hint); ``tools/call`` runs :func:`synthorg.tools.tool_call` in a worker thread (the services
are synchronous Django code) as the principal the transport authenticated. A domain error
is returned as a tool error (``is_error``) whose text and structured content are the same
problem document the REST API answers, so a model can read why and try again — a database
that is restarting or unreachable too (``503``, ``database_unavailable``, ``retry_after``).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import close_old_connections
from mcp.server import Server

from synthorg.db.unavailable import is_database_unavailable, log_unavailable, unavailable_problem
from synthorg.errors import DomainError
from synthorg.tools import ToolSpec, registered_tools, tool_call

logger = logging.getLogger(__name__)

SERVER_NAME = "synthorg-memory"
INSTRUCTIONS = (
    "Long-term memory for this agent: search, store and manage memories, shared knowledge "
    "and the organisation's policies and facts. Tools that delete data need confirm: true "
    "and a reason."
)

INTERNAL_ERROR = "The server failed to run the tool. Quote the correlation id when reporting it."

PrincipalResolver = Callable[[Any], Any]
"""Given the SDK's request context, return the acting principal (or raise DomainError)."""


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema(),
        annotations=types.ToolAnnotations(destructive_hint=spec.destructive),
    )


def problem(error: DomainError) -> dict[str, Any]:
    body = {
        "status": error.status,
        "code": error.code,
        "title": error.title,
        "detail": error.detail,
        "errors": error.errors,
    }
    body.update(error.extra)
    return body


def _run_tool(principal_source, resolve: PrincipalResolver, name: str, arguments, via: str):
    """Synchronous part of a call: resolve the principal, run the tool (own DB connection)."""
    close_old_connections()
    try:
        principal = resolve(principal_source)
        result = tool_call(principal=principal, name=name, arguments=arguments, via=via)
    except DomainError as error:
        return None, problem(error)
    except Exception as exc:
        if is_database_unavailable(exc):  # restarting or unreachable: 503, retry_after
            return None, unavailable_problem(log_unavailable(f"MCP tool {name!r}", exc))
        # A bug must not reach the client as a JSON-RPC error carrying its message (e.g.
        # PostgreSQL's): log it and answer a tool error with an id.
        correlation_id = uuid.uuid4().hex
        logger.exception("tool %r failed (correlation id %s)", name, correlation_id)
        return None, {
            "status": 500,
            "code": "internal_error",
            "title": "Internal server error",
            "detail": INTERNAL_ERROR,
            "errors": [],
            "correlation_id": correlation_id,
        }
    finally:
        close_old_connections()
    return result, None


def build_server(resolve: PrincipalResolver, *, via: str) -> Server:
    """An MCP server whose calls run as ``resolve(request_context)``."""

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(spec) for spec in registered_tools()])

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        result, error = await sync_to_async(_run_tool, thread_sensitive=False)(
            ctx, resolve, params.name, params.arguments, via
        )
        if error is not None:
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps(error))],
                structured_content=error,
                is_error=True,
            )
        data = result.data if isinstance(result.data, dict) else {"result": result.data}
        return types.CallToolResult(
            content=[types.TextContent(text=result.content)], structured_content=data
        )

    return Server(
        SERVER_NAME,
        version="1",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
