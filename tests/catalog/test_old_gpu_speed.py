"""A catalog card's architecture reaches the speed model on every path: the
configurator's request and the all-cards sweep apply the old-generation factor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalog.models import Accelerator, LLMModel
from catalog.sizing import Setup, sizing_request
from catalog.sizing.requests import device
from estimator.api import run_estimate, sweep
from estimator.api.speeds import device_for_speed as speed_device_for
from estimator.speed import architecture_factor, speed_multiplier

CONFIG = json.loads(
    (
        Path(__file__).resolve().parents[2]
        / "estimator/data/validation/configs/meta-llama__Llama-3.1-8B-Instruct.json"
    ).read_text()
)


def card(slug: str, architecture: str) -> Accelerator:
    # A Tesla P40-like board (24 GB, 346 GB/s); only the architecture differs.
    return Accelerator.objects.create(
        vendor="NVIDIA",
        name=slug,
        slug=slug,
        memory_gb=24,
        bandwidth_gbps=346,
        fp16_tflops=12,
        architecture=architecture,
        curated=True,
    )


@pytest.mark.django_db
def test_a_pascal_card_decodes_slower_by_the_fitted_factor_on_both_paths() -> None:
    model = LLMModel.objects.create(name="Llama 3.1 8B", slug="llama", config=CONFIG)
    pascal, turing = card("p40", "Pascal"), card("t-like", "Turing")
    assert device(pascal).architecture == "Pascal"
    setup = Setup(quant="Q4_K_M", context_tokens=8192)
    speeds = []
    for c in (pascal, turing):
        request = sizing_request(model=model, accelerator=c, setup=setup, measured={})
        speeds.append(run_estimate(request).decode_tokens_per_s.estimate)
    factor = architecture_factor("Pascal")
    assert factor > 1.5  # 2 published GTX 10xx rows: ~2x slower than the bandwidth model
    # the Turing card takes its family's fitted correction instead (speed.corrections)
    turing_device = speed_device_for(device(turing))
    correction = speed_multiplier("decode", "llama.cpp", "cuda", turing_device, "Q4_K_M")
    assert turing_device.family == "nvidia-turing"
    assert speeds[1] / speeds[0] == pytest.approx(factor * correction, rel=1e-6)
    # the all-cards sweep (explore pages) applies the same factor and correction
    request = sizing_request(model=model, accelerator=pascal, setup=setup, measured={})
    rows = sweep(request, [device(pascal), device(turing)], ["Q4_K_M"])
    ratio = rows[1].decode_tokens_per_s / rows[0].decode_tokens_per_s
    assert ratio == pytest.approx(factor * correction)
    assert rows[0].decode_tokens_per_s == pytest.approx(speeds[0])
