"""DRF authentication: agents by API key, humans by Django session."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication

from persistence.principal import Principal
from persistence.selectors.identity import agent_for_api_key, human_principal


class AgentKeyAuthentication(BaseAuthentication):
    """``Authorization: Bearer sok_<prefix>_<secret>`` (modelled on DRF's TokenAuthentication).

    No header ⇒ this authenticator abstains (the session authenticator may still apply,
    otherwise DRF answers 401 with ``WWW-Authenticate``). A present but malformed, unknown,
    revoked or expired key is a 401.
    """

    keyword = "Bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != self.keyword.lower():
            raise exceptions.AuthenticationFailed(
                _("Malformed Authorization header: expected 'Bearer <agent API key>'."),
                code="malformed_credentials",
            )
        result = agent_for_api_key(parts[1])
        if result.error is not None:
            raise exceptions.AuthenticationFailed(result.error.message, code=result.error.code)
        return Principal.for_agent(result.key.agent, api_key=result.key), result.key

    def authenticate_header(self, request) -> str:
        return f'{self.keyword} realm="synthorg"'


def principal_for_raw_key(raw_key: str):
    """An agent's :class:`Principal` for ``raw_key``, or why not (for non-DRF interfaces
    such as the MCP server); the company is loaded here, not lazily later."""
    from synthorg.mcp.auth import KeyRejected

    result = agent_for_api_key(raw_key)
    if result.error is not None:
        return KeyRejected(result.error.code, result.error.message)
    return Principal.for_agent(result.key.agent, api_key=result.key)


class HumanSessionAuthentication(SessionAuthentication):
    """A logged-in Django user acting in one of their companies.

    A user in several companies picks one with the ``X-Company`` header (the slug).
    """

    def authenticate(self, request):
        result = super().authenticate(request)
        if result is None:
            return None
        user, _auth = result
        principal = human_principal(user, company_slug=request.META.get("HTTP_X_COMPANY"))
        if principal is None:
            raise exceptions.PermissionDenied(
                "You are not a member of any company (or of the one named in X-Company).",
                code="no_company_membership",
            )
        return principal, None
