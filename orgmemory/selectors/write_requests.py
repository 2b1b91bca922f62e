"""Write-access requests an agent or a human may see."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet

from orgmemory.models import WriteAccessRequest
from persistence.principal import Principal
from synthorg.errors import NotFoundError

REQUEST_NOT_FOUND = "No write-access request with this id exists in your company."


def write_requests_for(*, principal: Principal, status: str | None = None) -> QuerySet:
    """Requests the principal may see: an agent its own, a human all of the company's."""
    queryset = WriteAccessRequest.objects.filter(company=principal.company).select_related(
        "requester", "decided_by"
    )
    if principal.is_agent:
        queryset = queryset.filter(requester=principal.agent)
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("-created_at", "-id")


def write_request_for(*, principal: Principal, request_id) -> WriteAccessRequest:
    try:
        return write_requests_for(principal=principal).get(pk=request_id)
    except (WriteAccessRequest.DoesNotExist, DjangoValidationError, ValueError) as exc:
        raise NotFoundError(REQUEST_NOT_FOUND, code="write_request_not_found") from exc
