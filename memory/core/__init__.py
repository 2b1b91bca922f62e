"""The core of agent memory (Django app label ``memory``).

Models (memories, archive, maintenance runs, re-embedding jobs), the write path
(``services.store`` through the pure ``write_gate``), edits (``services.edit``), shared
knowledge, search (``selectors.search``), maintenance (consolidation, retention, archive),
re-embedding, export/import/erasure, admin pages and q2 tasks. Pure algorithms with no
Django import live in ``retrieval/`` and ``consolidation/``.

The core never imports the layers above it (prompting, procedural, ingestion, interfaces);
where it must call out it declares an extension point (:mod:`memory.core.extensions`) that
a capability fills in its ``AppConfig.ready``.
"""
