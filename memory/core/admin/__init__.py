"""Admin pages of the core: memories, the archive, maintenance runs, re-embedding jobs."""

from memory.core.admin import maintenance, memory, reembed

__all__ = ["maintenance", "memory", "reembed"]
