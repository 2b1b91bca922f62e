"""Building blocks every section of the company config shares.

``FROZEN`` is the model config of every section (immutable, no NaN/inf, unknown keys refused);
``ConfigFieldError`` is how a cross-field validator names the field it refuses, which
:func:`synthorg.company_config.parse_company_config` turns into a dotted path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated

from pydantic import ConfigDict, StringConstraints

NotBlankStr = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]

FROZEN = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")
_WINDOWS_PATH = re.compile(r"^[A-Za-z]:[\\/]|\\")


class ConfigFieldError(ValueError):
    """A cross-field rule broken by ``field`` (a name relative to the model that raised it)."""

    def __init__(self, field: str, message: str, *, code: str | None = None) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        #: a domain code for the error entry (default: pydantic's ``value_error``)
        self.code = code


#: the code of an error for a key that names something this service does not run (a Mem0
#: backend, a Qdrant or SQLite store, an embedder "provider"): accepting it would record a
#: choice that changes nothing, so it is refused saying what the service uses instead
NOT_OFFERED_CODE = "config_value_not_offered"


def refuse_not_offered(data: object, field: str, offered: object, reason: str) -> None:
    """Refuse ``data[field]`` (a mapping about to be validated) unless it is ``offered``.

    Runs before field validation so the error says *why* rather than "input should be …".
    """
    if isinstance(data, Mapping) and field in data and data[field] != offered:
        raise ConfigFieldError(
            field, f"{data[field]!r} is not offered: {reason}", code=NOT_OFFERED_CODE
        )


RELATIVE_ONLY = (
    "must be a name relative to the company's directory on the server "
    "(SYNTHORG_TENANT_FILES_DIR/<company id>/); absolute paths are refused"
)


#: A server path names a directory or file inside the company's directory: 100 characters
#: leave room for what the server adds to one name (the wiki export's staging directory,
#: ``.<name>.new-<32 hex>``) under the file system's 255 per name, and fit the audit trail's
#: target column that records it. Longer values were accepted and then failed on disk.
MAX_SERVER_PATH = 100
SERVER_PATH_TOO_LONG = "must be at most 100 characters (got {length})"


def reject_unsafe_path(field: str, value: str | None, *, server_path: bool = True) -> None:
    """Refuse traversal and non-POSIX forms; a ``server_path`` (one the server opens) must
    also be relative: it is resolved under the company's directory
    (:func:`synthorg.tenancy.tenant_path`)."""
    if value is None:
        return
    if server_path and len(value) > MAX_SERVER_PATH:
        raise ConfigFieldError(field, SERVER_PATH_TOO_LONG.format(length=len(value)))
    if server_path and value.startswith("/"):
        raise ConfigFieldError(field, RELATIVE_ONLY)
    if ".." in value.replace("\\", "/").split("/"):
        raise ConfigFieldError(field, "must not contain '..' (parent-directory traversal)")
    if _WINDOWS_PATH.search(value):
        raise ConfigFieldError(field, "must be a POSIX path (no drive letters or backslashes)")
