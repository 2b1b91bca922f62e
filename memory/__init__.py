"""Agent memory: a namespace of layers, each importing only those below it.

::

    memory.interfaces   REST api, tool catalogue and tool views, console pages, commands;
                        MemoryService, the one entry point for agent-facing calls
          |
    memory.prompting    context assembly, injection strategies, self-editing,
                        Search-and-Ask (no models)
          |
    memory.procedural   execution reports -> lessons, SKILL.md, pruning; evolver/
    memory.ingestion    conversations -> memories, journals, dream      (leaves)
          |
    memory.core         app label "memory": models, write gate, store, search,
                        maintenance, archive, re-embedding, admin, tasks
          |
    orgmemory -> persistence -> synthorg

The core reaches a capability only through extension points registered in
``AppConfig.ready``. ``make lint`` holds the direction with import-linter
(``.importlinter``).
"""
