"""Memory as tools: the injection strategies (context, tool-based, self-editing), the
Search-and-Ask loop, the self-editing memory blocks, the tool catalogue served by
``/api/v1/memories/tools`` and the MCP server, and their REST views."""
