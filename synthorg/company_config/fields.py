"""Building blocks every section of the company config shares.

``FROZEN`` is the model config of every section (immutable, no NaN/inf, unknown keys refused);
``ConfigFieldError`` is how a cross-field validator names the field it refuses, which
:func:`synthorg.company_config.parse_company_config` turns into a dotted path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

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


#: the code of an error for a key set to a non-default value while the setting it tunes is
#: off (``evolver.window_days`` with the evolver disabled, ``pruning.max_entries`` under the
#: ``ttl`` strategy): it would change nothing, so it is refused naming the setting it needs
NEEDS_SETTING_CODE = "config_value_needs_setting"


def non_default_fields(section: BaseModel, *, skip: tuple[str, ...] = ()) -> list[str]:
    """The fields of ``section`` set to something other than their default (a stored, fully
    dumped config re-parses cleanly: a key equal to its default is never refused)."""
    return [
        name
        for name, field in type(section).model_fields.items()
        if name not in skip
        and getattr(section, name) != field.get_default(call_default_factory=True)
    ]


def refuse_unless(
    section: BaseModel,
    active: bool,
    needs: str,
    *,
    fields: tuple[str, ...] | None = None,
    skip: tuple[str, ...] = ("enabled",),
    prefix: str = "",
) -> None:
    """Refuse ``fields`` of ``section`` (default: all but ``skip``) set to a non-default value
    while ``active`` is false: under the rest of the config they would change nothing.
    ``needs`` names the setting that makes them act (``"enabled is true"``); ``prefix``
    names ``section`` relative to the model whose validator calls this."""
    if active:
        return
    for name in non_default_fields(section, skip=skip):
        if fields is None or name in fields:
            raise ConfigFieldError(
                prefix + name,
                f"is only used when {needs}; set that too, or remove this key",
                code=NEEDS_SETTING_CODE,
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
