from rest_framework.permissions import SAFE_METHODS, BasePermission

from persistence.principal import Principal


class IsPrincipal(BasePermission):
    """Any authenticated agent or human member; viewers may only read."""

    def has_permission(self, request, view) -> bool:
        principal = request.user
        if not isinstance(principal, Principal):
            return False
        return request.method in SAFE_METHODS or principal.can_write


class IsAgent(BasePermission):
    message = "This endpoint is for agents (authenticate with an agent API key)."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, Principal) and request.user.is_agent


class IsHuman(BasePermission):
    message = "This endpoint is for human operators."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, Principal) and request.user.is_human
