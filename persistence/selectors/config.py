"""The one cached accessor services use to read a company's configuration."""

from __future__ import annotations

from functools import lru_cache

from persistence.models import Company
from synthorg.company_config import CompanyConfig, parse_company_config


def company_config(company: Company) -> CompanyConfig:
    """The parsed config of ``company``, re-parsed only when ``config_revision`` changes."""
    return _parsed(company.pk, company.config_revision, _Frozen(company.config))


class _Frozen:
    """Carries the raw JSON into the cache without making it part of the key."""

    __slots__ = ("data",)

    def __init__(self, data) -> None:
        self.data = data

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other) -> bool:
        return isinstance(other, _Frozen)


@lru_cache(maxsize=1024)
def _parsed(company_id: int, revision: int, raw: _Frozen) -> CompanyConfig:
    return parse_company_config(raw.data)


REDACTED = "[redacted]"
#: What an agent may not read in its company's config: the name of the server secret its
#: embedder uses, where that embedder is, and paths on the server. Humans (members, via the
#: console or a session) see the whole config.
AGENT_REDACTED_FIELDS = (
    ("memory", "embedder", "api_key_env"),
    ("memory", "embedder", "base_url"),
    ("memory", "procedural", "skill_md_directory"),
    ("memory", "storage", "data_dir"),
    ("memory", "fine_tune", "checkpoint_path"),
    ("memory", "fine_tune", "training_data_dir"),
    ("memory", "fine_tune", "evaluation_file"),
)


def company_config_for_agent(company: Company) -> dict:
    """The config as JSON with :data:`AGENT_REDACTED_FIELDS` replaced by ``"[redacted]"``
    where set (an unset field stays ``null``, so an agent still sees *whether* it is set)."""
    dumped = company_config(company).model_dump(mode="json")
    for *parents, name in AGENT_REDACTED_FIELDS:
        section = dumped
        for part in parents:
            section = section.get(part) if isinstance(section, dict) else None
        if isinstance(section, dict) and section.get(name) is not None:
            section[name] = REDACTED
    return dumped
