"""Recommendations: least-compressed fitting quant, best devices, the make-it-fit plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from estimator.api import Device, estimate, parse_request, run_estimate
from estimator.recommend import best_devices, best_quant, make_it_fit

CONFIGS = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation" / "configs"


def request(name: str, memory_gb: float, **extra: Any) -> dict[str, Any]:
    config = json.loads((CONFIGS / f"{name}.json").read_text())
    return {
        "model": {"hf_config": config},
        "weights": {"format": "gguf", "quant": "BF16"},
        "device": {"memory_gb": memory_gb, "bandwidth_gbps": 1000},
        "workload": {"context_tokens": 8192},
        **extra,
    }


def test_it_picks_the_least_compressed_quant_that_fits() -> None:
    # Llama-3.1-8B on 10 GB (8.93 GB usable after llama.cpp's 1 GiB margin): BF16 (16.1 GB)
    # does not fit the card at all; Q8_0 (8.5 GB + 1 GiB KV at 8,192 tokens + 0.3 GB
    # buffers = 9,919,742,994 B) is above the 8.93 GB but within the 10,000,000,000 B of
    # the card: it fits, tight, with `--fit off` (Q6_K, 8.0 GB in all, fits the default).
    parsed = parse_request(request("meta-llama__Llama-3.1-8B-Instruct", 10))
    choice = best_quant(parsed, run_estimate)
    assert choice is not None and choice.name == "Q8_0" and choice.verdict == "tight"
    assert choice.per_device_bytes == 9_919_742_994
    assert run_estimate(parsed).fit.verdict == "does_not_fit"


def test_it_returns_no_quant_above_the_quality_floor_when_none_fits() -> None:
    parsed = parse_request(request("meta-llama__Llama-3.1-70B-Instruct", 12))
    assert best_quant(parsed, run_estimate, min_bits_per_weight=4.0) is None


def test_it_finds_the_smallest_and_the_fastest_fitting_device() -> None:
    parsed = parse_request(request("meta-llama__Llama-3.1-8B-Instruct", 24))
    devices = [
        Device(memory_gb=8, bandwidth_gbps=300, name="small"),
        Device(memory_gb=24, bandwidth_gbps=1000, name="mid"),
        Device(memory_gb=48, bandwidth_gbps=900, name="big"),
        Device(memory_gb=80, bandwidth_gbps=3000, name="fast", device_class="consumer"),
    ]
    best = best_devices(parsed, devices, run_estimate)
    # BF16 needs 17.4 GB in all: 8 GB is too small, 24 GB is the smallest that fits
    assert best.smallest is not None and best.smallest.name == "mid"
    assert best.fastest is not None and best.fastest.name == "fast"


def test_every_plan_step_that_claims_to_fit_does_fit_and_carries_flags() -> None:
    # Q4_K_M (4.9 GB) fits 16 GB, but 131,072 tokens of f16 KV (16 GiB) do not
    parsed = parse_request(
        request(
            "meta-llama__Llama-3.1-8B-Instruct",
            16,
            weights={"format": "gguf", "quant": "Q4_K_M"},
            workload={"context_tokens": 131072},
        )
    )
    result = run_estimate(parsed)
    assert result.fit.verdict == "does_not_fit"
    steps = make_it_fit(parsed, result, run_estimate, n_layers=32)
    actions = {step.action for step in steps}
    assert {"shorter_context", "quantize_kv", "offload_layers"} <= actions
    # No quant down to the 3-bit floor makes room for 16 GiB of KV: no such step (a step
    # whose setup still does not fit is dropped).
    assert "smaller_quant" not in actions
    assert all(step.fits for step in steps)
    for step in steps:
        assert step.flags
        if step.fits:  # within the default budget, or within the card with --fit off
            within = step.per_device_bytes <= step.usable_bytes_per_device
            assert within or ("--fit" in step.flags and step.per_device_bytes <= 16_000_000_000)


def test_it_gives_vllm_flags_for_vllm_requests() -> None:
    req = request(
        "meta-llama__Llama-3.1-8B-Instruct",
        24,
        engine={"name": "vllm"},
        workload={"context_tokens": 65536},
    )
    req["weights"] = {"format": "hf", "dtype": "bf16"}
    parsed = parse_request(req)
    steps = make_it_fit(parsed, run_estimate(parsed), run_estimate, n_layers=32)
    flags = {flag for step in steps for flag in step.flags}
    assert "--max-model-len" in flags and "--kv-cache-dtype" in flags
    assert "--tensor-parallel-size" in flags


def test_the_json_api_adds_recommendations_when_asked() -> None:
    result = estimate(request("meta-llama__Llama-3.1-8B-Instruct", 10, recommend=True))
    assert result["recommendations"]["best_quant"]["name"] == "Q8_0"  # tight, as above
    assert result["recommendations"]["make_it_fit"][0]["fits"] is True
    assert "recommendations" not in estimate(request("meta-llama__Llama-3.1-8B-Instruct", 10))


def _vllm(memory_gb: float, share: float | None = None) -> Any:
    engine: dict[str, Any] = {"name": "vllm"}
    if share is not None:
        engine["gpu_memory_utilization"] = share
    return parse_request(
        request(
            "meta-llama__Llama-3.1-8B-Instruct",
            memory_gb,
            weights={"format": "hf", "dtype": "bf16"},
            engine=engine,
        )
    )


def test_make_it_fit_offers_vllms_memory_share_where_it_is_enough() -> None:
    # Llama-3.1-8B BF16 (16.1 GB of weights) with an 8,192-token cache in vLLM: find the
    # device size where 0.90 of it is too little (the need is within vLLM's default
    # margin: tight, with a start flag) and the computed share is enough.
    low, high = 16.0, 40.0  # 0.9 x 16 is too little; 0.9 x 40 is enough
    while high - low > 0.01:
        middle = (low + high) / 2
        fit = run_estimate(_vllm(middle)).fit
        if fit.verdict == "does_not_fit" or fit.within_default_margin:
            low = middle
        else:
            high = middle
    memory_gb = low
    parsed = _vllm(memory_gb)
    result = run_estimate(parsed)
    assert result.fit.verdict == "tight" and result.fit.within_default_margin
    # The share is the next 0.01 step above need / device, at most 0.95.
    total = round(memory_gb * 1e9)
    share = min(0.95, ((100 * result.per_device_bytes) // total + 1) / 100)
    assert result.fit.start_memory_share == share
    assert result.fit.start_flags == ("--gpu-memory-utilization", f"{share:g}")
    steps = make_it_fit(parsed, result, run_estimate, 32)
    step = next(step for step in steps if step.action == "memory_share")
    assert step.fits and step.flags == ("--gpu-memory-utilization", f"{share:g}")
    assert step.change == {"engine.gpu_memory_utilization": share}
    # At that share the setup starts with no further flag.
    assert not run_estimate(_vllm(memory_gb, share)).fit.within_default_margin


def test_make_it_fit_offers_no_memory_share_step_to_llama_cpp_or_at_the_higher_share() -> None:
    parsed = parse_request(request("meta-llama__Llama-3.1-8B-Instruct", 10))
    steps = make_it_fit(parsed, run_estimate(parsed), run_estimate, 32)
    assert all(step.action != "memory_share" for step in steps)
    high = _vllm(16.0, 0.95)
    steps = make_it_fit(high, run_estimate(high), run_estimate, 32)
    assert all(step.action != "memory_share" for step in steps)


def test_make_it_fit_lists_only_steps_whose_setup_runs() -> None:
    # Llama-3.1-8B BF16 (16.1 GB of weights) in vLLM on 16 GB: even 0.95 of the card
    # (15.2 GB) is less than the weights, so the larger memory share is no step; every
    # step listed fits or is tight (its start flags added), none "does_not_fit".
    parsed = _vllm(16.0)
    result = run_estimate(parsed)
    assert result.fit.verdict == "does_not_fit"
    steps = make_it_fit(parsed, result, run_estimate, 32)
    assert steps and all(step.fits and step.verdict != "does_not_fit" for step in steps)
    assert all(step.action != "memory_share" for step in steps)
    speeds = [step.decode_tokens_per_s for step in steps]
    assert speeds == sorted(speeds, reverse=True)  # the fastest fix first


def test_make_it_fit_offers_fewer_sequences_when_they_are_the_cause() -> None:
    # Llama-3.1-8B Q4_K_M on 10 GB with 8 sequences of 8,192 tokens: each sequence adds
    # 8,192 x 32 layers x 2 x 8 KV heads x 128 x 2 bytes = 1 GiB of f16 KV, so 8 do not
    # fit; the step is the estimator's max_concurrent_sequences, sized again, with
    # llama-server's -c for all slots (8,192 x n) and -np n.
    parsed = parse_request(
        request(
            "meta-llama__Llama-3.1-8B-Instruct",
            10,
            weights={"format": "gguf", "quant": "Q4_K_M"},
            workload={"context_tokens": 8192, "concurrent_sequences": 8},
        )
    )
    result = run_estimate(parsed)
    assert result.fit.verdict == "does_not_fit"
    most = result.max_concurrent_sequences
    assert 1 <= most < 8
    step = next(
        s for s in make_it_fit(parsed, result, run_estimate, 32) if s.action == "fewer_sequences"
    )
    assert step.change == {"workload.concurrent_sequences": most}
    assert step.flags[:4] == ("-c", str(8192 * most), "-np", str(most))
    assert step.fits
    one = parse_request(
        request(
            "meta-llama__Llama-3.1-8B-Instruct",
            10,
            weights={"format": "gguf", "quant": "Q4_K_M"},
            workload={"context_tokens": 8192, "concurrent_sequences": 1},
        )
    )
    assert all(
        s.action != "fewer_sequences" for s in make_it_fit(one, run_estimate(one), run_estimate, 32)
    )
