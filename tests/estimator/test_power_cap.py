"""An NVIDIA board's llama.cpp prefill rate is capped by its power
(speed.power_capped_tflops): worked examples, the fitted cap, the request field, and the
published runs of throughput.csv where 300-350 W boards listed above the RTX 4090
prefill slower than it."""

import json
from pathlib import Path

import pytest

from estimator.api import RequestError, parse_request, result_to_dict, run_estimate
from estimator.calibration.product import product_prefill
from estimator.calibration.rows import load_measurements
from estimator.factors import prefill_tflops_per_watt
from estimator.speed import power_capped_tflops

CONFIGS = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation" / "configs"


def test_the_cap_is_the_power_times_the_rate_per_watt():
    # RTX 6000 Ada: 364.25 TFLOPS listed (int8 / 2), 300 W: min(364.25, 0.9 x 300) = 270
    assert power_capped_tflops(364.25, 300, "nvidia", 0.9) == pytest.approx(270.0)
    # RTX 4090: 330.3 listed, 450 W: min(330.3, 405) = 330.3, the listed rate
    assert power_capped_tflops(330.3, 450, "nvidia", 0.9) == pytest.approx(330.3)
    # H100 PCIe: 756.5 listed, 350 W: 315
    assert power_capped_tflops(756.5, 350, "nvidia", 0.9) == pytest.approx(315.0)
    # no power figure, another vendor, or no fitted cap: the listed rate
    assert power_capped_tflops(364.25, None, "nvidia", 0.9) == 364.25
    assert power_capped_tflops(383.0, 300, "amd", 0.9) == 383.0
    assert power_capped_tflops(364.25, 300, "nvidia", 0.0) == 364.25


def test_the_committed_cap_is_one_of_the_fitted_candidates():
    # fitted on the llama.cpp rows from 0.7-1.2 TFLOPS per W (calibration/prefill.py)
    assert prefill_tflops_per_watt() == pytest.approx(0.9)


def _prefill(device: str) -> float:
    m = next(
        m
        for m in load_measurements()
        if m.kind == "prefill"
        and m.device_name == device
        and m.model == "Llama 3 8B"
        and m.quant == "Q4_K_M"
        and not m.excluded
    )
    return product_prefill(m).tokens_per_s.estimate


def test_a_300_w_board_listed_above_the_rtx_4090_prefills_slower_as_published():
    # XiongjieDai's pp512 runs: RTX 6000 Ada 5,792 and L40S 6,035 against the RTX 4090's
    # 7,139 tokens/s (0.81x, 0.85x) though both list 364 TFLOPS against 330; uncapped the
    # model put them 1.1x above it
    rtx_4090 = _prefill("NVIDIA GeForce RTX 4090")
    assert _prefill("NVIDIA RTX 6000 Ada Generation") / rtx_4090 == pytest.approx(0.81, abs=0.12)
    assert _prefill("NVIDIA L40S") / rtx_4090 == pytest.approx(0.85, abs=0.12)


def _request(tdp_w: object) -> dict:
    device: dict[str, object] = {
        "memory_gb": 48,
        "bandwidth_gbps": 960,
        "fp16_tflops": 364.25,
        "int8_tops": 728.5,
        "vendor": "nvidia",
    }
    if tdp_w is not None:
        device["tdp_w"] = tdp_w
    return {
        "model": {
            "hf_config": json.loads(
                (CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text()
            )
        },
        "weights": {"format": "gguf", "quant": "Q4_K_M"},
        "device": device,
        "engine": {"name": "llama.cpp", "backend": "cuda"},
        "workload": {"context_tokens": 4096, "prompt_tokens": 512},
    }


def test_the_request_takes_the_board_power_and_prefill_follows_it():
    uncapped = result_to_dict(run_estimate(parse_request(_request(None))))
    capped = result_to_dict(run_estimate(parse_request(_request(300))))
    # the same setup: prefill at 270 instead of 364.25 TFLOPS is slower, memory unchanged
    assert capped["prefill_tokens_per_s"]["estimate"] < uncapped["prefill_tokens_per_s"]["estimate"]
    assert capped["per_device_bytes"] == uncapped["per_device_bytes"]
    with pytest.raises(RequestError) as caught:
        parse_request(_request(-5))
    assert caught.value.field == "device.tdp_w"
