"""The core's persisted state: memories (and the texts corrections replaced), their archive,
maintenance runs, re-embedding jobs and the request log."""

from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory, MemoryChunk
from memory.core.models.reembed import ReembedJob, ReembedStatusChange
from memory.core.models.request_log import RequestLogEntry
from memory.core.models.revision import MemoryRevision

__all__ = [
    "ArchivedMemory",
    "MaintenanceRun",
    "Memory",
    "MemoryChunk",
    "MemoryRevision",
    "ReembedJob",
    "ReembedStatusChange",
    "RequestLogEntry",
]
