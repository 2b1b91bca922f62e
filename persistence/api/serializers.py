from rest_framework import serializers

from persistence.models import Agent, Company
from synthorg.api.serializers import ModelSerializer, Serializer


class CompanySerializer(ModelSerializer):
    class Meta:
        model = Company
        fields = ("id", "name", "slug")


class AgentSerializer(ModelSerializer):
    class Meta:
        model = Agent
        fields = (
            "id",
            "name",
            "role",
            "department",
            "seniority",
            "autonomy_level",
            "memory_level",
            "is_active",
            "created_at",
        )


class PrincipalSerializer(Serializer):
    kind = serializers.ChoiceField(choices=["agent", "human"])
    company = CompanySerializer()
    agent = AgentSerializer(allow_null=True)
    username = serializers.CharField(allow_null=True)
    role = serializers.CharField(allow_blank=True)
