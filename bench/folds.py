"""Folds of a dev split, by conversation, so a lever is judged on every part of the data.

A lever tuned to the split as a whole can win in total while losing on most of it; judged
per fold it must win (or tie) on each. Folds are whole conversations (their questions share
a haystack): LoCoMo's five conversations are five folds of one, LongMemEval's 40
one-question haystacks are four folds of ten, stratified by question category (sorted by
category then id, dealt round-robin) so every fold holds every kind of question.
"""

from __future__ import annotations

import json
from pathlib import Path

#: folds per dev split (by file name); another file gets DEFAULT_FOLDS
FOLDS = {"locomo_dev.json": 5, "longmemeval_dev.json": 4}
DEFAULT_FOLDS = 4


def folds_for(path: str | Path) -> int:
    return FOLDS.get(Path(path).name, DEFAULT_FOLDS)


def assign_folds(path: str | Path, folds: int | None = None) -> dict[str, int]:
    """``sample_id`` → fold (0-based) for every conversation of the LoCoMo-format file."""
    data = json.loads(Path(path).read_text())
    count = folds or folds_for(path)
    if count < 1:
        raise ValueError("folds must be at least 1")

    def category(sample: dict) -> int:
        cats = [int(q["category"]) for q in sample.get("qa") or [] if "category" in q]
        return min(cats) if cats else 0

    ordered = sorted(data, key=lambda s: (category(s), s["sample_id"]))
    return {sample["sample_id"]: index % count for index, sample in enumerate(ordered)}
