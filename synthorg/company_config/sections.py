"""The registry of company-config sections a capability declares next to its code.

The kernel keeps the root of the schema (:class:`synthorg.company_config.CompanyConfig`) and
the core sections; a capability app (procedural lessons, the skill evolver, ingestion,
fine-tuning) keeps its section's model in its own ``config.py`` and registers it in its
``AppConfig.ready()``::

    register_config_sections(
        ConfigSection("memory.procedural", ProceduralMemoryConfig, after="chunking"),
    )

Registering adds the section as a field of the model its path names (``memory`` is
:class:`~synthorg.company_config.memory.CompanyMemoryConfig`) at the position ``after`` /
``before`` give, then rebuilds that model and every model above it, so the root model
validates, dumps and describes itself (JSON schema, the console's config form, error paths)
exactly as if the section were declared there: persistence still validates a company's
whole config without importing any app (docs/decisions/0010-company-config-in-the-kernel.md).

A rule that spans sections (the evolver needs a consolidation schedule) is a
:class:`ConfigCheck` registered with them; a host model runs its checks through
:func:`run_section_checks` in its last ``after`` validator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo


class ConfigSectionError(RuntimeError):
    """A section registration the registry refuses (a programming error, raised at start-up)."""


@dataclass(frozen=True)
class ConfigSection:
    """A section of the company config: ``path`` is dotted from the root (``memory.dream``);
    its last part is the field name, the rest names the model that holds it. ``after`` /
    ``before`` name the sibling field it is placed next to (default: last)."""

    path: str
    model: type[BaseModel]
    after: str | None = None
    before: str | None = None

    @property
    def parent(self) -> str:
        return self.path.rpartition(".")[0]

    @property
    def name(self) -> str:
        return self.path.rpartition(".")[2]


@dataclass(frozen=True)
class ConfigCheck:
    """A cross-section rule run on the model at ``host`` (dotted from the root) after its own
    validators; ``check(instance)`` raises :class:`~synthorg.company_config.fields.
    ConfigFieldError` naming the field it refuses, relative to ``host``."""

    host: str
    check: Callable[[Any], None]


@dataclass
class _Registry:
    sections: dict[str, ConfigSection] = field(default_factory=dict)
    checks: dict[type[BaseModel], list[Callable[[Any], None]]] = field(default_factory=dict)
    root: type[BaseModel] | None = None


_REGISTRY = _Registry()


def config_root_set(root: type[BaseModel]) -> None:
    """The root model sections are found from (:class:`synthorg.company_config.CompanyConfig`
    names itself when it is defined: the package imports this module, not the reverse)."""
    _REGISTRY.root = root


def _root() -> type[BaseModel]:
    if _REGISTRY.root is None:
        raise ConfigSectionError("the company config's root model is not defined yet")
    return _REGISTRY.root


def _chain(path: str) -> list[type[BaseModel]]:
    """The models from the root down to the one ``path`` names (``""``: the root)."""
    models = [_root()]
    for part in path.split(".") if path else ():
        current = models[-1]
        info = current.model_fields.get(part)
        annotation = info.annotation if info is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            raise ConfigSectionError(
                f"{path!r} names no section model ({part!r} is not a model field of "
                f"{current.__name__})"
            )
        models.append(annotation)
    return models


def _placed(fields: dict[str, FieldInfo], section: ConfigSection) -> dict[str, FieldInfo]:
    anchor = section.after or section.before
    if anchor is not None and anchor not in fields:
        raise ConfigSectionError(f"{section.path}: no field {anchor!r} to place it next to")
    if section.after and section.before:
        raise ConfigSectionError(f"{section.path}: give after or before, not both")
    new = FieldInfo.from_annotated_attribute(section.model, Field(default_factory=section.model))
    out: dict[str, FieldInfo] = {}
    for name, info in fields.items():
        if name == section.before:
            out[section.name] = new
        out[name] = info
        if name == section.after:
            out[section.name] = new
    out.setdefault(section.name, new)
    return out


def register_config_sections(*sections: ConfigSection, checks: Iterable[ConfigCheck] = ()) -> None:
    """Add ``sections`` to the company config and ``checks`` to their hosts (once each; a
    capability calls this in its ``AppConfig.ready()``)."""
    rebuild: list[list[type[BaseModel]]] = []
    for section in sections:
        if section.path in _REGISTRY.sections:
            raise ConfigSectionError(f"{section.path}: registered twice")
        chain = _chain(section.parent)
        host = chain[-1]
        if section.name in host.model_fields:
            raise ConfigSectionError(f"{section.path}: {host.__name__} already has that field")
        host.__pydantic_fields__ = _placed(dict(host.model_fields), section)
        _REGISTRY.sections[section.path] = section
        rebuild.append(chain)
    for check in checks:
        host = _chain(check.host)[-1]
        _REGISTRY.checks.setdefault(host, []).append(check.check)
    _rebuild(rebuild)


def _rebuild(chains: list[list[type[BaseModel]]]) -> None:
    """Rebuild every changed model, then the models that hold it, up to the root (each once,
    the deepest first: a model's validator embeds the ones of its fields)."""
    done: set[type[BaseModel]] = set()
    for depth in range(max((len(chain) for chain in chains), default=0), 0, -1):
        for chain in chains:
            if len(chain) >= depth and chain[depth - 1] not in done:
                model = chain[depth - 1]
                model.model_rebuild(force=True)
                done.add(model)


def run_section_checks(instance: BaseModel) -> None:
    """Run the registered :class:`ConfigCheck` rules of ``instance``'s model."""
    for check in _REGISTRY.checks.get(type(instance), ()):
        check(instance)


def registered_sections() -> tuple[ConfigSection, ...]:
    """The registered sections, in registration order."""
    return tuple(_REGISTRY.sections.values())
