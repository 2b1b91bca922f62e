"""Compatibility for one release: see :mod:`memory.reembed.tasks`."""
