"""catalog.sizing: the typed request a setup becomes, the one size function, and the
cached card sweep."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from catalog import hardware
from catalog.models import Accelerator, LLMModel, ModelWeights
from catalog.sizing import Setup, model_on_cards, size_setup, sizing_request, sweeps
from catalog.sizing.workflows import default_quant
from estimator.api import RequestError, parse_request, request_to_dict
from estimator.units import GB, GIB

CONFIG = json.loads(
    (
        Path(__file__).resolve().parents[2]
        / "estimator/data/validation/configs/meta-llama__Llama-3.1-8B-Instruct.json"
    ).read_text()
)


def board() -> Accelerator:
    """A two-device HBM board: 128 GiB, 3,200 GB/s and 380 TFLOPS per board."""
    return Accelerator.objects.create(
        vendor="AMD",
        name="Test Board",
        slug="test-board",
        memory_gb=128,
        memory_gib=128,
        bandwidth_gbps=3200,
        fp16_tflops=380,
        chips_per_board=2,
        memory_type="HBM2e",
    )


def llama() -> LLMModel:
    return LLMModel.objects.create(name="Llama 3.1 8B", slug="llama", config=CONFIG)


@pytest.mark.django_db
def test_a_setup_becomes_the_request_its_json_form_would_parse_to() -> None:
    setup = Setup(
        quant="Q8_0",
        context_tokens=16384,
        gpus=2,
        sequences=4,
        kv="q8_0",
        offload_percent=25,
        host_bandwidth_gbps=102.4,
    )
    model = llama()
    request = sizing_request(model=model, accelerator=board(), setup=setup, measured={})
    expected = parse_request(
        {
            "model": {"hf_config": CONFIG},
            "weights": {"format": "gguf", "quant": "Q8_0"},
            "device": {
                # 2 boards x 2 devices; each device 128 / 2 = 64 GiB, 1,600 GB/s, 190 TFLOPS
                "memory_gb": 64 * GIB / GB,
                "bandwidth_gbps": 1600,
                "fp16_tflops": 190,
                "count": 4,
                "vendor": "amd",
                "memory_kind": "discrete",
                "name": "Test Board",
                "device_class": "datacenter",  # HBM
                "memory_type": "HBM2e",
                "host_bandwidth_gbps": 102.4,
            },
            "engine": {"name": "llama.cpp"},  # the vendor's default backend: rocm
            "workload": {
                "context_tokens": 16384,
                "concurrent_sequences": 4,
                "prompt_tokens": 512,
                "output_tokens": 256,
                "kv_cache_dtype": "q8_0",
                "tensor_parallel": 1,  # llama.cpp splits layers, not tensors
                "offload": {"fraction": 0.25},
            },
        }
    )
    assert request == expected
    assert request.engine.backend == "rocm"
    # vLLM-like engines split tensors over every device.
    vllm = replace(setup, quant="bf16", kv="fp8", engine="vllm")
    assert (
        sizing_request(
            model=model, accelerator=Accelerator.objects.get(), setup=vllm, measured={}
        ).workload.tensor_parallel
        == 4
    )


@pytest.mark.django_db
def test_a_refused_setup_names_the_field_as_parse_request_would() -> None:
    setup = Setup(quant="Q4_K_M", context_tokens=8192, kv="fp8")  # llama.cpp has no fp8 cache
    with pytest.raises(RequestError) as refused:
        sizing_request(model=llama(), accelerator=board(), setup=setup, measured={})
    assert refused.value.field == "workload.kv_cache_dtype"


@pytest.mark.django_db
def test_size_setup_picks_the_best_quant_and_uses_the_measured_file() -> None:
    model, card = llama(), board()
    # A made-up measured size: the sizing must take it rather than compute its own.
    measured = 16_100_000_000
    ModelWeights.objects.create(model=model, format="gguf", quant="BF16", file_bytes=measured)
    setup = Setup(quant="", context_tokens=8192)
    sized = size_setup(model=model, accelerator=card, setup=setup)
    # 8B at BF16 (~16 GB) fits a 64 GiB device: the top of the GGUF ladder.
    assert sized.setup.quant == default_quant(model=model, accelerator=card, setup=setup)
    assert sized.setup.quant == "BF16"
    assert sized.measured_weights_bytes == sized.request.weights.file_bytes == measured
    assert sized.result.weights_bytes == measured
    assert sized.devices == 2 and sized.backend == "rocm"
    # The stored form of the request parses back to the request that was sized.
    assert parse_request(request_to_dict(sized.request)) == sized.request


@pytest.mark.django_db
def test_the_card_sweep_is_computed_once_per_inputs_and_again_after_an_edit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = llama()
    card = Accelerator.objects.create(
        vendor="NVIDIA",
        name="Test 24",
        slug="test-24",
        memory_gb=24,
        bandwidth_gbps=1000,
        architecture="Ada Lovelace",
    )
    calls: list[int] = []
    real = sweeps.sweep_cards

    def counted(*args: Any) -> list[sweeps.CardFit]:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(sweeps, "sweep_cards", counted)

    def sweep(context: int = 8192, quants: tuple[str, ...] = ("Q8_0", "Q4_K_M")) -> str | None:
        fits = model_on_cards(
            model,
            [card],
            quants=quants,
            context_tokens=context,
            matrix=hardware.support_matrix(),
        )
        return fits[0].quant

    assert sweep() == "Q8_0" and len(calls) == 1  # 8B Q8_0 (~8.5 GB) fits 24 GB
    assert sweep() == "Q8_0" and len(calls) == 1  # the same inputs: from the cache
    sweep(context=16384)
    sweep(quants=("Q4_K_M",))
    assert len(calls) == 3  # every non-catalog input is part of the key
    card.memory_gb = 8
    card.save()  # a catalog edit: a new catalog version
    assert sweep() == "Q4_K_M" and len(calls) == 4


@pytest.mark.django_db
def test_the_smallest_cards_serve_every_gpu_count_of_a_setup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = llama()
    cards = [
        Accelerator.objects.create(
            vendor="NVIDIA",
            name=f"Test {gb}",
            slug=f"test-{gb}",
            memory_gb=gb,
            bandwidth_gbps=1000,
            architecture="Ada Lovelace",
        )
        for gb in (8, 16, 24)
    ]
    calls: list[int] = []
    real = sweeps._smallest_cards

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(sweeps, "_smallest_cards", counted)
    matrix = hardware.support_matrix()

    def smallest(gpus: int) -> dict[str, str]:
        setup = Setup(quant="Q4_K_M", context_tokens=8192, gpus=gpus)
        request = sizing_request(model=model, accelerator=cards[0], setup=setup, measured={})
        choice = sweeps.smallest_cards(request, cards, {}, matrix)
        return {quant: card.slug for quant, card in choice.by_quant.items()}

    one = smallest(1)
    assert smallest(2) == smallest(4) == one
    assert len(calls) == 1  # every card's request is on one device anyway
    # 8B at Q4_K_M (~4.9 GB) fits the 8 GB card; Q8_0 (~8.5 GB) needs the 16 GB one.
    assert one["Q4_K_M"] == "test-8" and one["Q8_0"] == "test-16"
