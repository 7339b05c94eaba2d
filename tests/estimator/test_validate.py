"""`python -m estimator.validate`: the accuracy report over the public data sets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from estimator.calibration.fit import quantile
from estimator.validate import Metric, Target, config_for, misses, report

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def summaries() -> dict[str, dict[str, Any]]:
    return {f"{s['dataset']}:{s['figure']}": s for s in report()}


def test_it_covers_every_data_set_with_measurements(summaries: dict[str, Any]) -> None:
    assert {s["dataset"] for s in summaries.values()} == {
        "gguf_sizes.csv",
        "gguf_sizes_ud.csv",
        "llamacpp_memory.csv",
        "vllm_memory.csv",
        "throughput.csv",
    }
    assert all(s["count"] >= 15 for s in summaries.values())
    # unsloth UD files: 40 rows the recipes' scales were fitted on, 22 held out
    assert summaries["gguf_sizes_ud.csv:weights_bytes (UD, fitted rows)"]["misses"] == []


@pytest.mark.parametrize(
    "key",
    [
        "gguf_sizes.csv:weights_bytes",  # median <= 1 %, max <= 3 %
        "llamacpp_memory.csv:kv_cache_bytes",  # every row within 0.5 %
        "llamacpp_memory.csv:overhead_breakdown.compute_buffer",  # median <= 15 %
        "vllm_memory.csv:per_device_weights_bytes",  # median <= 3 %
        "vllm_memory.csv:kv_cache_capacity_tokens",  # median <= 5 %, p90 <= 15 %
    ],
)
def test_the_memory_figures_meet_their_targets(summaries: dict[str, Any], key: str) -> None:
    assert summaries[key]["misses"] == [], summaries[key]


def test_decode_bounds_hold_most_measurements(summaries: dict[str, Any]) -> None:
    decode = summaries["throughput.csv:decode_tokens_per_s"]
    assert decode["inside_share"] >= 0.8
    assert decode["median_pct"] <= 10.0


def test_it_marks_a_missed_target() -> None:
    metric = Metric("d", "f", Target(median_pct=1.0, inside_share=0.9))
    metric.add(110.0, 100.0, low=90.0, high=120.0)  # 10 % off, inside the bounds
    metric.add(100.0, 100.0, low=101.0, high=120.0)  # exact, outside the bounds
    summary = metric.summary()
    assert summary["median_pct"] == pytest.approx(5.0)
    assert summary["inside_share"] == 0.5
    assert misses(summary, metric.target) == ["median_pct", "inside_share"]


def test_its_quantile_interpolates_like_numpy() -> None:
    # numpy.quantile([1, 2, 3, 4], 0.9) = 3 + 0.7 x (4 - 3) = 3.7
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.9) == pytest.approx(3.7)


def test_it_maps_data_set_names_to_configs() -> None:
    assert config_for("Llama 3 8B") is not None
    assert json.loads(config_for("Gemma 3 27b It Qat") or "{}")["model_type"] == "gemma3_text"
    assert config_for("Some Unknown Model") is None


def test_the_command_prints_json_and_exits_0() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "estimator.validate", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert {s["figure"] for s in json.loads(done.stdout)} >= {"weights_bytes", "kv_cache_bytes"}
