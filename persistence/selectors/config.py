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
