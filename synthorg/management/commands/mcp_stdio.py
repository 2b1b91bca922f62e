"""Serve the MCP server over stdin/stdout for desktop MCP clients.

The agent's API key comes from an environment variable (``SYNTHORG_AGENT_API_KEY`` by
default), never from the command line (where ``ps`` would show it). The key is checked at
start (exit 2 if it is not usable) and again on every tool call, so revoking it takes
effect at once. Logs go to stderr; stdout carries only the protocol.
"""

import os

import anyio
from django.core.management.base import BaseCommand, CommandError

from synthorg.errors import AccessDeniedError
from synthorg.mcp.auth import KeyRejected, principal_for_key
from synthorg.mcp.server import build_server

DEFAULT_ENV = "SYNTHORG_AGENT_API_KEY"


class Command(BaseCommand):
    help = "Serve the MCP tools over stdio as the agent whose API key is in an env variable."

    def add_arguments(self, parser):
        parser.add_argument(
            "--key-env",
            default=DEFAULT_ENV,
            help=f"Environment variable holding the agent API key (default {DEFAULT_ENV}).",
        )

    def handle(self, *args, key_env, **options):
        raw_key = os.environ.get(key_env, "").strip()
        if not raw_key:
            raise CommandError(f"Set {key_env} to the agent's API key.", returncode=2)
        checked = principal_for_key(raw_key)
        if isinstance(checked, KeyRejected):
            raise CommandError(f"{key_env}: {checked.message}", returncode=2)
        self.stderr.write(f"MCP over stdio as {checked}.")

        def resolve(_ctx):
            principal = principal_for_key(raw_key)
            if isinstance(principal, KeyRejected):
                raise AccessDeniedError(principal.message, code=principal.code)
            return principal

        server = build_server(resolve, via="stdio")

        async def main():
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(main)
