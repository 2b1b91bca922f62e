"""Who is calling: an agent (API key) or a human operator (session), always with a company."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from persistence.models import Agent, AgentApiKey, Company


@dataclass(frozen=True, eq=False)
class Principal:
    company: Company
    agent: Agent | None = None
    user: AbstractBaseUser | None = None
    api_key: AgentApiKey | None = None
    role: str = ""  # the human's membership role; "" for agents

    # DRF/Django treat request.user as a user object.
    is_authenticated = True
    is_anonymous = False
    is_active = True

    @property
    def is_agent(self) -> bool:
        return self.agent is not None

    @property
    def is_human(self) -> bool:
        return self.user is not None

    @property
    def can_write(self) -> bool:
        return self.is_agent or self.role != "viewer"

    @property
    def pk(self):  # used by DRF throttles and logging
        return f"agent:{self.agent.pk}" if self.agent else f"user:{self.user.pk}"

    def __str__(self) -> str:
        if self.agent is not None:
            return f"agent {self.agent.name} ({self.company.slug})"
        return f"user {self.user} ({self.company.slug})"

    @classmethod
    def for_agent(cls, agent: Agent, api_key: AgentApiKey | None = None) -> Principal:
        return cls(company=agent.company, agent=agent, api_key=api_key)

    @classmethod
    def for_human(cls, user, company: Company, role: str) -> Principal:
        return cls(company=company, user=user, role=role)
