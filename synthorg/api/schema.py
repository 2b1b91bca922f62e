"""What the OpenAPI schema shares across apps, and its post-processing.

:data:`PROBLEM` is the one documented error response: a problem+json body whose ``code``
names the domain error (:mod:`synthorg.api.errors`). Request bodies reject keys they do not
declare (:mod:`synthorg.api.serializers`), so :func:`forbid_unknown_request_fields` gives every
request component reachable from a request body ``additionalProperties: false``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse

PROBLEM = OpenApiResponse(description="problem+json (see `code`)")

REF_PREFIX = "#/components/schemas/"


def forbid_unknown_request_fields(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    components = result.get("components", {}).get("schemas", {})
    pending = [
        media.get("schema", {})
        for item in result.get("paths", {}).values()
        for operation in item.values()
        if isinstance(operation, dict)
        for media in operation.get("requestBody", {}).get("content", {}).values()
    ]
    seen: set[str] = set()
    while pending:
        node = pending.pop()
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref", "")
        if ref.startswith(REF_PREFIX):
            name = ref.removeprefix(REF_PREFIX)
            if name not in seen and name in components:
                seen.add(name)
                component = components[name]
                if component.get("type") == "object" and "properties" in component:
                    component.setdefault("additionalProperties", False)
                pending.append(component)
            continue
        for key in ("properties",):
            pending.extend(node.get(key, {}).values())
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                pending.append(node[key])
        for key in ("allOf", "anyOf", "oneOf"):
            pending.extend(node.get(key, []))
    return result
