"""Capture strategies and the percentile rule (pure functions, hand-computed values)."""

import pytest

from memory.procedural.capture import (
    decide_capture,
    initial_capture_status,
    nearest_rank_percentile,
)
from memory.procedural.config import CaptureConfig, ProceduralMemoryConfig


def cfg(type_="hybrid", **kw):
    return CaptureConfig(type=type_, **kw)


@pytest.mark.parametrize(
    ("strategy", "outcome", "path"),
    [
        ("failure", "failed", "failure"),
        ("failure", "partial", "failure"),
        ("failure", "succeeded", None),
        ("success", "failed", None),
        ("success", "partial", None),
        ("success", "succeeded", "success"),
        ("hybrid", "failed", "failure"),
        ("hybrid", "partial", "failure"),
        ("hybrid", "succeeded", "success"),
    ],
)
def test_strategy_paths(strategy, outcome, path):
    decision = decide_capture(cfg(strategy), outcome=outcome, quality_score=9.0, recent_scores=[])
    assert decision.path == path


def test_nearest_rank_percentile():
    scores = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert nearest_rank_percentile(scores, 75) == 8  # ceil(7.5) = 8th value
    assert nearest_rank_percentile(scores, 100) == 10
    assert nearest_rank_percentile(scores, 0) == 1
    assert nearest_rank_percentile([8.5], 75) == 8.5
    with pytest.raises(ValueError):
        nearest_rank_percentile([], 50)


@pytest.mark.parametrize(
    ("score", "recent", "fires", "reason"),
    [
        (None, [], False, "success capture needs a quality_score"),
        (7.99, [], False, "quality_score 7.99 < min_quality_score 8"),
        (8.0, [], True, ""),  # no history: the minimum alone decides
        (9.0, [8, 8.5, 9, 9.5], True, ""),  # p75 of 4 values = 3rd = 9 → equal passes
        (8.9, [8, 8.5, 9, 9.5], False, "quality_score 8.9 below the agent's p75 (9)"),
        (10.0, [10, 10, 10], True, ""),
        (8.0, [2, 3, 4, 5], True, ""),  # above percentile and minimum
        (8.0, [9, 9, 9, 9], False, "quality_score 8 below the agent's p75 (9)"),
    ],
)
def test_success_threshold_and_percentile(score, recent, fires, reason):
    decision = decide_capture(
        cfg("success"), outcome="succeeded", quality_score=score, recent_scores=recent
    )
    assert decision.fires is fires
    assert decision.reason == reason


def test_custom_thresholds():
    capture = cfg("success", min_quality_score=5.0, success_quality_percentile=50)
    assert decide_capture(
        capture, outcome="succeeded", quality_score=6, recent_scores=[4, 6, 9, 9]
    ).fires
    assert not decide_capture(
        capture, outcome="succeeded", quality_score=5.5, recent_scores=[4, 6, 9, 9]
    ).fires


def test_initial_status():
    on = ProceduralMemoryConfig(capture="success")
    assert initial_capture_status(on, outcome="succeeded", quality_score=9) == "queued"
    assert initial_capture_status(on, outcome="succeeded", quality_score=1) == "not_applicable"
    off = ProceduralMemoryConfig(enabled=False)
    assert initial_capture_status(off, outcome="failed", quality_score=None) == "disabled"


def test_config_shorthands_and_bounds():
    config = ProceduralMemoryConfig(capture="hybrid", pruning="ttl", propagation="role")
    assert (config.capture.type, config.pruning.strategy, config.propagation.strategy) == (
        "hybrid",
        "ttl",
        "role",
    )
    assert ProceduralMemoryConfig().capture.min_quality_score == 8.0
    assert ProceduralMemoryConfig().capture.success_quality_percentile == 75.0
    assert ProceduralMemoryConfig().pruning.max_age_days == 90
    assert ProceduralMemoryConfig().pruning.max_entries == 100
    assert ProceduralMemoryConfig().propagation.max_propagation_targets == 10
    with pytest.raises(ValueError):
        ProceduralMemoryConfig(capture={"type": "always"})
    with pytest.raises(ValueError):
        ProceduralMemoryConfig(capture={"min_quality_score": 11})
