"""The core's persisted state: memories, their archive, maintenance runs, re-embedding jobs."""

from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory
from memory.core.models.reembed import ReembedJob

__all__ = ["ArchivedMemory", "MaintenanceRun", "Memory", "ReembedJob"]
