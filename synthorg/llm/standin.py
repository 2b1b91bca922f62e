"""The demo's stand-in model, by name (pure).

``make demo`` serves a local OpenAI-wire server that answers the product's own prompts
through its deterministic paths (``memory/interfaces/demo_llm.py``); it lists exactly one
model, :data:`DEMO_STANDIN_MODEL`. The kernel names it here so the startup banner and
``/healthz`` (:func:`synthorg.health.llm_summary`) can say it is a stand-in, never a model.
"""

from __future__ import annotations

DEMO_STANDIN_MODEL = "synthorg-demo-standin"
DEMO_STANDIN_LABEL = "demo stand-in, not a real model"
DEMO_STANDIN_NOTE = (
    f"{DEMO_STANDIN_LABEL}: a local server started by `make demo` that answers the product's "
    "own prompts with its deterministic paths (rule lessons and drafts, conversation turns as "
    "facts, extractive dream and summaries); set SYNTHORG_LLM_BASE_URL to use a real LLM"
)


def is_demo_standin(model: str | None) -> bool:
    return (model or "").strip() == DEMO_STANDIN_MODEL
