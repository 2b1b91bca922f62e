"""The self-editing strategy's blocks: core, archival and recall memory."""

from __future__ import annotations

from memory.core.domain import StoreResult
from memory.core.selectors.search import SearchHit
from memory.interfaces.service.base import ServiceBase, routed
from memory.prompting import self_editing


class SelfEditingMixin(ServiceBase):
    """Core / archival / recall memory, as the self-editing tools read and edit them."""

    @routed
    def core_read(self):
        return self_editing.core_block(agent=self.agent, config=self.config.self_editing)

    @routed
    def core_write(self, *, content: str, replace_id=None, session_id=None, project_id=None):
        return self_editing.core_memory_write(
            agent=self.agent,
            principal=self.principal,
            content=content,
            replace_id=replace_id,
            session_id=session_id,
            project_id=project_id,
        )

    @routed
    def archival_search(self, *, query: str, limit: int | None = None) -> list[SearchHit]:
        return self_editing.archival_search(
            agent=self.agent, query=query, limit=limit, full_config=self.full_config
        )

    @routed
    def archival_write(self, **fields) -> StoreResult:
        result = self_editing.archival_write(agent=self.agent, principal=self.principal, **fields)
        return self._advised(result, fields.get("tags", ()))

    @routed
    def recall_read(self, *, query: str | None, limit: int, conversation_id: str | None = None):
        return self_editing.recall_read(
            agent=self.agent, query=query, limit=limit, conversation_id=conversation_id
        )

    @routed
    def recall_write(self, **fields):
        return self_editing.recall_write(agent=self.agent, principal=self.principal, **fields)
