"""The core's persisted state: memories (and the texts corrections replaced), their archive,
maintenance runs, re-embedding jobs, the request log, query-adapter fine-tune runs and their
checkpoints."""

from memory.core.models.finetune import AdapterCheckpoint, FineTuneRun
from memory.core.models.maintenance import ArchivedMemory, MaintenanceRun
from memory.core.models.memory import Memory, MemoryChunk
from memory.core.models.reembed import ReembedJob, ReembedStatusChange
from memory.core.models.request_log import RequestLogEntry
from memory.core.models.revision import MemoryRevision

__all__ = [
    "AdapterCheckpoint",
    "ArchivedMemory",
    "FineTuneRun",
    "MaintenanceRun",
    "Memory",
    "MemoryChunk",
    "MemoryRevision",
    "ReembedJob",
    "ReembedStatusChange",
    "RequestLogEntry",
]
