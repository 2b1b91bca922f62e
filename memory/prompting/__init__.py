"""How memory reaches a prompt (no models): context assembly (``context``), the injection
strategies (``strategies``: context, tool-based, self-editing), the self-editing memory
blocks (``self_editing``) and the Search-and-Ask loop (``search_and_ask``, ``llm_checks``).

Imports the core, procedural (lessons in context) and ingestion (recall blocks); never the
interfaces.
"""
