"""How a lesson reads in a prompt (pure: works on any object with the tier attributes).

The **full** rendering carries all three tiers — discovery, then activation (when / do /
why) and execution (numbered steps); the **discovery** rendering is the first tier alone,
used when the full one does not fit the token budget.
"""

from __future__ import annotations


def render_full(lesson) -> str:
    lines = [
        lesson.discovery,
        f"When: {lesson.condition}",
        f"Do: {lesson.action}",
        f"Why: {lesson.rationale}",
        "Steps:",
        *[f"{i}. {step}" for i, step in enumerate(lesson.execution_steps, start=1)],
    ]
    return "\n".join(lines)


def render_discovery(lesson) -> str:
    return lesson.discovery
