"""Procedural learning: execution reports (their lesson capture runs in the background) and
lessons or org skills the agent applied. Errors pass through: the services raise domain
errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from memory.core.models import Memory
from memory.interfaces.service.base import ServiceBase
from memory.procedural.models import OrgSkill
from memory.procedural.services.reports import SubmittedReport, execution_report_submit
from memory.procedural.services.skill_pool import org_skill_applied, procedural_memory_applied


class ProceduralMixin(ServiceBase):
    """Execution reports, applied lessons and applied org skills."""

    def report_execution(self, data: Mapping[str, Any]) -> SubmittedReport:
        """Store an execution report; its lesson capture runs in the background."""
        return execution_report_submit(agent=self.agent, data=data)

    def lesson_applied(self, memory_id: UUID | str) -> Memory:
        return procedural_memory_applied(agent=self.agent, memory_id=memory_id)

    def org_skill_applied(self, fact_id: UUID | str) -> OrgSkill:
        return org_skill_applied(agent=self.agent, fact_id=fact_id)
