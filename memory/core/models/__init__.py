"""The core's persisted state: memories, their archive, maintenance runs, re-embedding jobs, the
request log."""

from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory
from memory.core.models.reembed import ReembedJob
from memory.core.models.request_log import RequestLogEntry

__all__ = ["ArchivedMemory", "MaintenanceRun", "Memory", "ReembedJob", "RequestLogEntry"]
