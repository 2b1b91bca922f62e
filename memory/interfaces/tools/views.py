"""REST interface of the tools: the definitions for the caller's strategy, and one call.

``GET /api/v1/memories/tools`` → the OpenAI function-calling definitions of the calling
agent's strategy (pass them straight to a chat-completions call); ``POST
/api/v1/memories/tools/call`` ``{"name", "arguments"}`` → ``{"content", "data"}``. Any tool of
the catalogue may be called (the MCP server serves the same catalogue); errors are
problem+json: 404 ``unknown_tool``, 400 ``invalid_tool_arguments`` /
``confirmation_required`` / ``reason_required``, and the services' own codes.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.interfaces.api.views.common import AgentView
from synthorg.api.schema import PROBLEM
from synthorg.api.serializers import Serializer
from synthorg.tools import tool_call

SEARCH_DEFINITION = {
    "type": "function",
    "function": {
        "name": "search_memory",
        "description": "Search your long-term memory ...",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}


class ToolListSerializer(Serializer):
    strategy = serializers.CharField()
    tools = serializers.ListField(child=serializers.DictField())


class ToolCallRequestSerializer(Serializer):
    name = serializers.CharField(max_length=100, help_text="The tool's name.")
    arguments = serializers.DictField(
        required=False, default=dict, help_text="The tool's arguments (a JSON object)."
    )


class ToolCallResultSerializer(Serializer):
    content = serializers.CharField(help_text="The result as text, for the model.")
    data = serializers.JSONField(help_text="The result as structured data.")


@extend_schema(tags=["memory tools"])
class ToolListView(AgentView, APIView):
    @extend_schema(
        summary="Tool definitions for the caller's memory strategy",
        description=(
            "OpenAI function-calling definitions of the tools the company's "
            "`memory.retrieval.strategy` gives the agent: none for `context`; `search_memory`, "
            "`recall_memory` (+ `store_memory`, `forget_memory` unless the agent's memory "
            "level is `none`) for `tool_based`; the six core/archival/recall tools for "
            "`self_editing`."
        ),
        responses={200: ToolListSerializer, 403: PROBLEM},
        examples=[
            OpenApiExample(
                "Tool-based",
                value={"strategy": "tool_based", "tools": [SEARCH_DEFINITION]},
                response_only=True,
            )
        ],
    )
    def get(self, request):
        strategy = self.service.strategy
        return Response(
            {"strategy": strategy.strategy_name, "tools": list(strategy.get_tool_definitions())}
        )


@extend_schema(tags=["memory tools"])
class ToolCallView(AgentView, APIView):
    @extend_schema(
        summary="Call one tool",
        description=(
            "Runs one tool as the calling agent and returns `content` (text for the model) "
            "and `data` (structured). Destructive tools (`forget_memory`, "
            "`retract_shared_knowledge`, `retract_org_fact`, `end_session`) need "
            '`"confirm": true` and a non-blank `reason`, which the audit trail records.'
        ),
        request=ToolCallRequestSerializer,
        responses={200: ToolCallResultSerializer, 400: PROBLEM, 403: PROBLEM, 404: PROBLEM},
        examples=[
            OpenApiExample(
                "Search",
                value={"name": "search_memory", "arguments": {"query": "billing deploys"}},
                request_only=True,
            ),
            OpenApiExample(
                "Forget",
                value={
                    "name": "forget_memory",
                    "arguments": {
                        "id": "3f1c2a9e-8a51-4c8e-9a77-2b0f6f0d4f10",
                        "confirm": True,
                        "reason": "superseded by the new deploy schedule",
                    },
                },
                request_only=True,
            ),
        ],
    )
    def post(self, request):
        serializer = ToolCallRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        # Validated by the tool's own argument model, from the raw JSON (types preserved).
        arguments = request.data.get("arguments", {})
        result = tool_call(
            principal=request.user,
            name=serializer.validated_data["name"],
            arguments=arguments,
            via="rest",
        )
        return Response({"content": result.content, "data": result.data})
