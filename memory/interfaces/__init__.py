"""Every way into agent memory (app label ``memory_interfaces``, no models).

``service.MemoryService`` is the one entry point for agent-facing calls: the REST views
(``api/``), the tool catalogue and tool views (``tools/``) and the MCP server call it.
Humans' pages (``console/``) and the management commands (``management/``) call the same
services the admin uses. Nothing below imports this package.
"""
