"""sweep() agrees with run_estimate cell by cell, and is fast enough for a catalog table."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from estimator.api import Device, cache, parse_request, run_estimate
from estimator.api.sweep import sweep

CONFIG = json.loads(
    (
        Path(__file__).resolve().parents[2]
        / "estimator/data/validation/configs"
        / "Qwen__Qwen3-30B-A3B.json"
    ).read_text()
)
DEVICES = [
    Device(memory_gb=12, bandwidth_gbps=360, fp16_tflops=25),
    Device(memory_gb=24, bandwidth_gbps=1008, fp16_tflops=165, name="RTX 4090"),
    Device(memory_gb=80, bandwidth_gbps=3350, fp16_tflops=989, name="H100"),
    Device(memory_gb=128, bandwidth_gbps=273, memory_kind="unified", vendor="nvidia"),
]
QUANTS = ["Q8_0", "Q4_K_M", "IQ2_XXS"]


@pytest.mark.parametrize("engine", ["llama.cpp", "vllm"])
def test_it_matches_run_estimate_for_every_cell(engine: str) -> None:
    base = {
        "model": {"hf_config": CONFIG},
        "engine": {"name": engine},
        "device": {"memory_gb": 24, "bandwidth_gbps": 1000},
        "workload": {"context_tokens": 4096, "concurrent_sequences": 2},
    }
    if engine == "vllm":
        base["weights"] = {"format": "hf", "dtype": "bf16"}
    request = parse_request(base)
    quants = QUANTS if engine == "llama.cpp" else ["bf16", "fp8", "awq-int4"]
    rows = sweep(request, DEVICES, quants)
    assert len(rows) == len(DEVICES) * len(quants)
    for row in rows:
        spec = (
            replace(request.weights, quant=row.quant)
            if engine == "llama.cpp"
            else replace(request.weights, dtype=row.quant)
        )
        single = run_estimate(replace(request, device=DEVICES[row.device_index], weights=spec))
        assert row.per_device_bytes == single.per_device_bytes
        assert row.verdict == single.fit.verdict
        assert row.decode_tokens_per_s == pytest.approx(single.decode_tokens_per_s.estimate)
        assert row.decode_low_tokens_per_s == pytest.approx(single.decode_tokens_per_s.low)
        assert row.decode_high_tokens_per_s == pytest.approx(single.decode_tokens_per_s.high)


def test_a_measured_file_size_sizes_the_cell_as_a_request_with_file_bytes_does() -> None:
    request = parse_request(
        {
            "model": {"hf_config": CONFIG},
            "device": {"memory_gb": 24, "bandwidth_gbps": 1000},
            "workload": {"context_tokens": 4096},
        }
    )
    # Qwen3-30B-A3B Q4_K_M as one uploader lists it: 18.6 GB (decimal).
    measured = {"Q4_K_M": 18_600_000_000}
    rows = sweep(request, DEVICES, ["Q4_K_M", "Q8_0"], measured_bytes=measured)
    for row in rows:
        spec = replace(request.weights, quant=row.quant, file_bytes=measured.get(row.quant))
        single = run_estimate(replace(request, device=DEVICES[row.device_index], weights=spec))
        assert row.weights_bytes == single.weights_bytes
        assert row.per_device_bytes == single.per_device_bytes
        assert row.decode_tokens_per_s == pytest.approx(single.decode_tokens_per_s.estimate)
    assert rows[0].weights_bytes == 18_600_000_000


def test_it_sweeps_1000_devices_by_27_quants_computing_each_quant_once() -> None:
    # Speed itself is measured by benchmarks/estimator_bench.py, not asserted here.
    from estimator.weights import GGUF_FILE_TYPES

    request = parse_request(
        {"model": {"hf_config": CONFIG}, "device": {"memory_gb": 24, "bandwidth_gbps": 1000}}
    )
    devices = [Device(memory_gb=4 + i % 190, bandwidth_gbps=100 + 7 * i) for i in range(1000)]
    sweep(request, devices[:1], GGUF_FILE_TYPES)  # per-quant weights are cached after this
    misses = cache.weights.cache_info().misses
    rows = sweep(request, devices, GGUF_FILE_TYPES)
    assert len(rows) == 27_000
    assert cache.weights.cache_info().misses == misses
