"""The MCP server: the registered agent tools (:mod:`synthorg.tools`) over the official
``mcp`` SDK, as streamable HTTP at ``/mcp/`` (mounted by :mod:`synthorg.asgi`) and as stdio
(``manage.py mcp_stdio``). Authentication is the agent's API key; every tool runs as that
agent, scoped to its company."""
