"""A setup nobody asked before: the configurator's card sweeps read only what they need
(fit_table, sweep(first_fit=True)) and share the cards' estimator Devices per catalog
version, with exactly the answers of the full sweeps they replace."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog import hardware
from catalog.models import Accelerator, LLMModel
from catalog.sizing import Setup, model_on_cards, sizing_request, smallest_cards, sweeps
from catalog.sizing.cache import forget_here
from catalog.sizing.requests import (
    MATRIX_GGUF_QUANTS,
    device,
    family_ladder,
    measured_bytes,
    measured_weights,
    native_format,
    sizeable_quants,
)
from catalog.sizing.workflows import _matrix_rows
from estimator.api import Request, sweep
from estimator.engines import runs_gguf
from estimator.weights import HF_FORMATS

CONFIGS = Path(__file__).resolve().parents[2] / "estimator/data/validation/configs"
LLAMA = json.loads((CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text())
QWEN_MOE = json.loads((CONFIGS / "Qwen__Qwen3-30B-A3B.json").read_text())
LADDER = ["Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "IQ4_XS"]


def catalog() -> list[Accelerator]:
    """NVIDIA cards from 8 to 141 GB (llama.cpp on CUDA), two Apple machines (llama.cpp on
    Metal, unified memory), a Cambricon MLU590 (vLLM: the other family for a GGUF page)
    and a two-chip board (left out: a sweep sizes single devices)."""
    specs: list[dict[str, Any]] = [
        {"vendor": "NVIDIA", "architecture": "Ampere", "memory_gb": gb, "price_usd": price}
        for gb, price in ((8, 300), (12, 350), (16, 500), (16, 450), (24, 1600), (48, 4000))
    ]
    specs += [
        {"vendor": "NVIDIA", "architecture": "Hopper", "memory_gb": 80, "price_usd": 25000},
        {"vendor": "NVIDIA", "architecture": "Hopper", "memory_gb": 141},
        {"vendor": "Apple", "architecture": "Apple M2", "memory_gb": 32, "memory_kind": "unified"},
        {"vendor": "Apple", "architecture": "Apple M2", "memory_gb": 96, "memory_kind": "unified"},
        {"vendor": "Cambricon", "architecture": "MLU", "memory_gb": 80},
        {"vendor": "AMD", "architecture": "CDNA 2", "memory_gb": 128, "chips_per_board": 2},
    ]
    return [
        Accelerator.objects.create(
            name=f"Card {i}",
            slug=f"card-{i}",
            bandwidth_gbps=800 + 100 * i,
            fp16_tflops=100,
            curated=True,
            **spec,
        )
        for i, spec in enumerate(specs)
    ]


def model(config: dict[str, Any], slug: str) -> LLMModel:
    return LLMModel.objects.create(name=slug, slug=slug, config=config)


def reference_smallest(
    request: Request, cards: Sequence[Accelerator], sizes: dict[str, int]
) -> tuple[dict[str, str], list[tuple[str, int]]]:
    """smallest_cards as it was computed before fit_table: the full sweep (decode speeds
    included) of every card and quant, read row by row."""
    matrix = hardware.support_matrix()
    gguf = request.weights.format == "gguf"
    by_quant: dict[str, Accelerator] = {}
    usable: list[tuple[Accelerator, int]] = []
    groups: dict[hardware.EngineChoice, list[Accelerator]] = {}
    for card in cards:
        choice = matrix.default_for(card)
        if choice is not None and hardware.chips(card) == 1:
            groups.setdefault(choice, []).append(card)
    for choice, group in groups.items():
        single = sweeps._single(request, choice)
        same = runs_gguf(choice.engine) == gguf
        quants = (
            sizeable_quants(single, MATRIX_GGUF_QUANTS if gguf else HF_FORMATS)
            if same
            else sizeable_quants(single, family_ladder(choice.engine))[:1]
        )
        rows = sweep(single, [device(c) for c in group], quants, measured_bytes=sizes)
        for row in rows:
            card = group[row.device_index]
            if row.quant == quants[0]:
                usable.append((card, row.usable_bytes_per_device))
            best = by_quant.get(row.quant)
            fits = row.verdict != "does_not_fit"
            if same and fits and (best is None or sweeps._order(card) < sweeps._order(best)):
                by_quant[row.quant] = card
    usable.sort(key=lambda pair: sweeps._order(pair[0]))
    return (
        {quant: card.slug for quant, card in by_quant.items()},
        [(card.slug, bytes_) for card, bytes_ in usable],
    )


SETUPS = [
    Setup(quant="Q4_K_M", context_tokens=8192),
    Setup(quant="Q8_0", context_tokens=40960, sequences=2, kv="q8_0"),
    Setup(quant="bf16", context_tokens=32768, engine="vllm"),
    Setup(quant="fp8", context_tokens=40960, engine="vllm", sequences=4),
]


@pytest.mark.django_db
@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: f"{s.engine}-{s.quant}-{s.context_tokens}")
def test_the_smallest_cards_are_those_of_the_full_sweep(setup: Setup) -> None:
    cards = catalog()
    for config, slug in ((LLAMA, "llama"), (QWEN_MOE, "qwen")):
        m = model(config, slug)
        sizes = {"Q4_K_M": 4_920_000_000} if slug == "llama" else {}
        request = sizing_request(model=m, accelerator=cards[0], setup=setup, measured={})
        choice = smallest_cards(request, cards, sizes, hardware.support_matrix())
        expected_by_quant, expected_usable = reference_smallest(request, cards, sizes)
        assert {q: c.slug for q, c in choice.by_quant.items()} == expected_by_quant
        assert [(c.slug, b) for c, b in choice.usable] == expected_usable
        assert choice.by_quant  # something fits, so the comparison says something
        # The two-chip board never reports its usable bytes; on a GGUF page every
        # llama.cpp card does (the NVIDIA and Apple ones).
        reported = {c.slug for c, _ in choice.usable}
        assert "card-11" not in reported
        if runs_gguf(setup.engine):
            assert {f"card-{i}" for i in range(10)} <= reported


@pytest.mark.django_db
def test_a_worked_example_of_the_smallest_cards() -> None:
    cards = catalog()
    m = model(LLAMA, "llama")
    setup = Setup(quant="Q4_K_M", context_tokens=8192)
    request = sizing_request(model=m, accelerator=cards[0], setup=setup, measured={})
    choice = smallest_cards(request, cards, {}, hardware.support_matrix())
    # Llama 3.1 8B at 8,192 tokens: KV 1,073,741,824 B + compute buffers 307,903,078 B on
    # top of the weights. The cards state no reported memory, so "8 GB" is 8 GiB
    # (hardware.memory_basis "assumed_binary"). Q4_K_M 4,918,061,484 -> 6,299,706,386 B:
    # the 8 GiB card (usable 8 GiB - 1 GiB = 7,516,192,768). Q8_0 8,538,098,092 ->
    # 9,919,742,994 B: past 8 GiB (8,589,934,592), within 12 GiB. BF16 16,066,218,412 ->
    # 17,447,863,314 B: past 16 GiB (17,179,869,184), so the 24 GiB card.
    assert choice.by_quant["Q4_K_M"].slug == "card-0"
    assert choice.by_quant["Q8_0"].slug == "card-1"
    assert choice.by_quant["BF16"].slug == "card-4"
    # The 16 GB cards tie on memory: the cheaper one ($450, card-3) comes first.
    assert [c.slug for c, _ in choice.usable[2:4]] == ["card-3", "card-2"]
    assert dict((c.slug, b) for c, b in choice.usable)["card-0"] == 7_516_192_768


@pytest.mark.django_db
@pytest.mark.parametrize("context", [8192, 32768, 40960])
def test_the_card_fits_are_those_of_the_full_ladder_sweep(context: int) -> None:
    cards = catalog()
    matrix = hardware.support_matrix()
    sizeable = [c for c in cards if hardware.chips(c) == 1]
    picked: set[str | None] = set()
    for config, slug in ((LLAMA, "llama"), (QWEN_MOE, "qwen")):
        m = LLMModel.objects.prefetch_related("weights").get(pk=model(config, slug).pk)
        fits = model_on_cards(m, sizeable, quants=LADDER, context_tokens=context, matrix=matrix)
        sizes = measured_bytes(measured_weights(m))
        for card, fit in zip(sizeable, fits, strict=True):
            choice = matrix.default_for(card)
            assert choice is not None
            ladder = sweeps._ladder(choice, LADDER, native_format(m.config))
            probe = sweeps.card_request(
                m, card, quant=ladder[0], context_tokens=context, choice=choice
            )
            quants = sizeable_quants(probe, ladder)
            rows = sweep(probe, [device(card)], quants, measured_bytes=sizes)
            expected = replace(sweeps._best_fit(rows), engine=choice.engine, backend=choice.backend)
            assert fit == expected, (slug, card.slug)
            picked.add(fit.quant)
    # The cards picked the first rung, a lower one and none: every branch is compared.
    assert {"Q8_0", None} < picked and picked - {"Q8_0", None}


@pytest.mark.django_db
def test_a_new_setup_reads_no_row_and_reuses_the_cards_devices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cards = catalog()
    m = model(LLAMA, "llama")
    matrix = hardware.support_matrix()
    forget_here()
    built: list[int] = []
    real = sweeps.device

    def counted(card: Accelerator, **kwargs: Any) -> Any:
        built.append(card.pk)
        return real(card, **kwargs)

    monkeypatch.setattr(sweeps, "device", counted)

    def new_setup(context: int) -> None:
        setup = Setup(quant="Q4_K_M", context_tokens=context)
        request = sizing_request(model=m, accelerator=cards[0], setup=setup, measured={})
        with CaptureQueriesContext(connection) as queries:
            smallest_cards(request, cards, {}, matrix)
        assert len(queries) == 0  # the cards and matrix are passed in

    new_setup(8192)
    assert len(built) == 11  # one Device per single-device card with an engine
    for context in (9216, 10240, 16384):
        new_setup(context)
    assert len(built) == 11  # later setups share them
    cards[0].memory_gb = 10
    cards[0].save()  # a catalog edit: a new catalog version, Devices built afresh
    new_setup(8192)
    assert len(built) == 22


@pytest.mark.django_db
@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: f"{s.engine}-{s.quant}-{s.context_tokens}")
def test_the_family_sweeps_answer_the_same_whichever_quant_was_sized(setup: Setup) -> None:
    """What lets the smallest-card and quant-matrix sweeps share one cache entry across a
    setup's weights formats (sweeps.any_quant): computed afresh for each sized quant of
    the family, the answers are equal, and the cached one matches each of them."""
    cards = catalog()
    m = model(LLAMA, "llama")
    gguf = runs_gguf(setup.engine)
    sizes = {"Q4_K_M": 4_920_000_000} if gguf else {}
    quants = ("Q8_0", "Q4_K_M", "IQ4_XS", "Q6_K") if gguf else ("bf16", "fp8", "fp32")
    fresh, cached = [], []
    for quant in quants:
        sized = replace(setup, quant=quant)
        request = sizing_request(model=m, accelerator=cards[0], setup=sized, measured={})
        fresh.append((reference_smallest(request, cards, sizes), _matrix_rows(request, sizes)))
        choice = smallest_cards(request, cards, sizes, hardware.support_matrix())
        cached.append(
            (
                {q: c.slug for q, c in choice.by_quant.items()},
                [(c.slug, b) for c, b in choice.usable],
            )
        )
    assert fresh[0][1] and fresh[0][0][0]  # rows and fitting cards: a real comparison
    assert all(answer == fresh[0] for answer in fresh)
    assert all(answer == fresh[0][0] for answer in cached)
