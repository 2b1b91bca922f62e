"""REST endpoints of agent memory: thin — validate, call the service as the calling agent,
serialize. The calling agent owns everything it stores; other agents' private memories and
anything of another company answer 404."""

from memory.interfaces.api.views.memories import (
    MemoryCollectionView,
    MemoryCountView,
    MemoryDetailView,
    MemoryHistoryView,
)
from memory.interfaces.api.views.retrieval import (
    MemoryContextView,
    MemorySearchView,
    SharedSearchView,
)
from memory.interfaces.api.views.shared import SessionEndView, SharedDetailView, SharedPublishView

__all__ = [
    "MemoryCollectionView",
    "MemoryContextView",
    "MemoryCountView",
    "MemoryDetailView",
    "MemoryHistoryView",
    "MemorySearchView",
    "SessionEndView",
    "SharedDetailView",
    "SharedPublishView",
    "SharedSearchView",
]
