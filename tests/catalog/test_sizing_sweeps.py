"""catalog.sizing.smallest_cards: the catalog card the configurator recommends per quant."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from catalog import hardware
from catalog.models import Accelerator, LLMModel
from catalog.sizing import Setup, sizing_request, smallest_cards
from catalog.sizing.requests import device
from estimator.api import WeightsSpec, run_estimate

CONFIG = json.loads(
    (
        Path(__file__).resolve().parents[2]
        / "estimator/data/validation/configs/meta-llama__Llama-3.1-8B-Instruct.json"
    ).read_text()
)


def card(slug: str, memory_gb: float, price: float | None = None) -> Accelerator:
    return Accelerator.objects.create(
        vendor="NVIDIA",
        name=slug,
        slug=slug,
        memory_gb=memory_gb,
        bandwidth_gbps=500,
        fp16_tflops=50,
        architecture="Ampere",  # llama.cpp's CUDA row in the engine support matrix
        price_usd=price,
        curated=True,
    )


@pytest.mark.django_db
def test_each_quant_gets_the_least_memory_card_the_estimator_says_fits() -> None:
    model = LLMModel.objects.create(name="Llama 3.1 8B", slug="llama", config=CONFIG)
    cards = [card("c8", 8), card("c12", 12), card("c16", 16, 400), card("c16b", 16, 300)]
    setup = Setup(quant="Q4_K_M", context_tokens=8192)
    request = sizing_request(model=model, accelerator=cards[0], setup=setup, measured={})
    choice = smallest_cards(request, cards, {}, hardware.support_matrix())
    for quant in ("Q4_K_M", "Q8_0", "F16"):
        fitting = []
        for c in cards:
            one = replace(request, weights=WeightsSpec("gguf", quant=quant), device=device(c))
            if run_estimate(one).fit.verdict != "does_not_fit":
                fitting.append(c)
        expected = min(fitting, key=lambda c: (c.memory_gb, c.price_usd or 1e12), default=None)
        assert choice.by_quant.get(quant) == expected, quant
    # Q8_0 of an 8B model (~8.5 GB of weights + 1 GiB KV) needs the 12 GB card; F16
    # (16.1 GB of weights) fits none of them.
    assert choice.by_quant["Q8_0"].slug == "c12"
    assert "F16" not in choice.by_quant
    # Equal memory: the cheaper card is preferred.
    holder = choice.smallest_holding(13 * 10**9)
    assert holder is not None and holder.slug == "c16b"
    assert choice.smallest_holding(10**15) is None
