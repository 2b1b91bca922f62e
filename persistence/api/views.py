from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from persistence.api.serializers import AgentSerializer, PrincipalSerializer
from persistence.models import Agent
from persistence.selectors.agents import agents_for_company
from persistence.selectors.config import company_config, company_config_for_agent


@extend_schema(tags=["identity"])
class MeView(APIView):
    @extend_schema(
        summary="Who am I",
        description="The authenticated principal: an agent (API key) or a human (session).",
        responses={200: PrincipalSerializer},
    )
    def get(self, request):
        principal = request.user
        payload = {
            "kind": "agent" if principal.is_agent else "human",
            "company": principal.company,
            "agent": principal.agent,
            "username": principal.user.get_username() if principal.is_human else None,
            "role": principal.role,
        }
        return Response(PrincipalSerializer(payload).data)


@extend_schema(tags=["identity"], summary="Agents of the caller's company")
class AgentListView(generics.ListAPIView):
    serializer_class = AgentSerializer
    queryset = Agent.objects.none()  # for the schema; requests use get_queryset()
    filterset_fields = ("seniority", "department", "memory_level", "is_active")

    def get_queryset(self):
        return agents_for_company(self.request.user.company)


@extend_schema(tags=["identity"], summary="One agent of the caller's company")
class AgentDetailView(generics.RetrieveAPIView):
    serializer_class = AgentSerializer

    def get_object(self):
        return get_object_or_404(
            agents_for_company(self.request.user.company), pk=self.kwargs["pk"]
        )


@extend_schema(tags=["config"])
class CompanyConfigView(APIView):
    @extend_schema(
        summary="The caller's effective company configuration",
        description=(
            "The validated `memory` and `org_memory` config with all defaults applied. "
            "An agent gets server secrets' names, the embedder's URL and server paths "
            'as `"[redacted]"` (`null` when unset).'
        ),
        responses={200: OpenApiResponse(description="The config as JSON.")},
    )
    def get(self, request):
        company = request.user.company
        if request.user.is_agent:
            return Response(company_config_for_agent(company))
        return Response(company_config(company).model_dump(mode="json"))
