"""drf-spectacular descriptions of our authenticators (imported by the app config)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class AgentKeyScheme(OpenApiAuthenticationExtension):
    target_class = "persistence.api.authentication.AgentKeyAuthentication"
    name = "agentKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "sok_<prefix>_<secret>",
            "description": "An agent API key, shown once when issued.",
        }


class HumanSessionScheme(OpenApiAuthenticationExtension):
    target_class = "persistence.api.authentication.HumanSessionAuthentication"
    name = "humanSession"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid"}
