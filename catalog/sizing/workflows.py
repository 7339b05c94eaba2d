"""Size one configuration, and the configurator's further questions about it.

`size_setup` is the one way a page sizes a setup on a card (configurator, saved reports,
compare, validate_portal): the estimator's typed Request and Result, plus what the pages
read next to them. The features below take that Sizing and answer with dataclasses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from catalog.models import Accelerator, LLMModel
from catalog.sizing.cache import remembered_content
from catalog.sizing.requests import (
    MATRIX_GGUF_QUANTS,
    Setup,
    fallback_quant,
    family_ladder,
    measured_weights,
    native_format,
    offloads,
    sizeable_quants,
    sizing_request,
)
from catalog.sizing.specs import published_context_tokens
from catalog.sizing.sweeps import CardChoice, any_quant
from estimator import recommend
from estimator.api import (
    FinetuneSpec,
    Offload,
    Request,
    RequestError,
    Result,
    check_request,
    run_estimate,
    sweep,
)
from estimator.api import cache as estimator_cache
from estimator.api.extras import FinetuneEstimate, finetune_estimate
from estimator.api.run import offloaded_layer_count
from estimator.engines import quantized_kv_types
from estimator.recommend import PlanStep
from estimator.weights import HF_FORMATS


@dataclass(frozen=True)
class Sizing:
    """One setup sized on one card. `setup.quant` is the quant that was sized (the one
    chosen when the caller asked for the best that fits); `offloaded_layers` of
    `model_layers` sit in host memory, as the estimator placed them."""

    setup: Setup
    request: Request
    result: Result
    offloaded_layers: int
    model_layers: int

    @property
    def backend(self) -> str:
        return self.request.engine.backend

    @property
    def devices(self) -> int:
        return self.request.device.count

    @property
    def measured_weights_bytes(self) -> int | None:
        """The catalog's measured file size the weights were sized from, if any."""
        return self.request.weights.file_bytes

    @property
    def fits(self) -> bool:
        return self.result.fit.verdict != "does_not_fit"


def size_setup(*, model: LLMModel, accelerator: Accelerator, setup: Setup) -> Sizing:
    """Size `setup` on `accelerator` boards (quant "" takes default_quant). Raises
    estimator.api.RequestError naming the field at fault."""
    if not setup.quant:
        setup = replace(
            setup, quant=default_quant(model=model, accelerator=accelerator, setup=setup)
        )
    request = sizing_request(
        model=model, accelerator=accelerator, setup=setup, measured=measured_weights(model)
    )
    result = run_estimate(request)
    spec = estimator_cache.model_spec(request.model.hf_config_json)
    # The longest context that fits, never past what the page offers: the published
    # context caps a config that allows more (DeepSeek-V3: 163,840 in config.json, 128K on
    # its card), as the form does (specs.model_context_limit).
    published = published_context_tokens(model)
    if published and result.max_context_tokens > published:
        result = replace(result, max_context_tokens=published)
    return Sizing(setup, request, result, offloaded_layer_count(request, spec), spec.n_layers)


def default_quant(*, model: LLMModel, accelerator: Accelerator, setup: Setup) -> str:
    """The least-compressed quant of the engine's family that fits (estimator.recommend's
    ladder and floor); when none does, the nearest miss: the rung that needs the least
    memory per device (awq-int4 5.8 GiB short, not bf16 78.5 GiB short); fallback_quant
    when nothing on the ladder can be sized. One GPU without offload is exactly what sweep
    evaluates, so the ladder costs one sweep; other setups take recommend.quant_options,
    which runs a full estimate per rung. Raises RequestError for a setup the estimator
    refuses whatever the quant."""
    fallback = fallback_quant(setup.engine)
    request = sizing_request(
        model=model, accelerator=accelerator, setup=replace(setup, quant=fallback), measured={}
    )
    names = family_ladder(setup.engine, native_format(model.config or {}))
    if request.device.count == 1 and not offloads(request):
        try:
            rows = sweep(request, [request.device], sizeable_quants(request, names))
        except RequestError:
            return fallback
        fits = {row.quant for row in rows if row.verdict != "does_not_fit"}
        nearest = min(rows, key=lambda row: row.per_device_bytes, default=None)
        return next(
            (name for name in names if name in fits), nearest.quant if nearest else fallback
        )
    options = recommend.quant_options(request, run_estimate)
    choice = next((option for option in options if option.fits), None)
    choice = choice or min(options, key=lambda option: option.per_device_bytes, default=None)
    return choice.name if choice else fallback


@dataclass(frozen=True)
class QuantRow:
    """One quant of the sized family on one of the setup's devices, without offload;
    `card` is the catalog card with the least memory that fits it (CardChoice)."""

    quant: str
    weights_bytes: int
    per_device_bytes: int
    verdict: str
    decode_tokens_per_s: float | None  # None when it does not fit: nothing would run
    measured: bool  # sized from the catalog's measured file
    card: Accelerator | None


def quant_matrix(sizing: Sizing, sizes: Mapping[str, int], cards: CardChoice) -> list[QuantRow]:
    """Every quant of the sized family on one device without offload (estimator.api.sweep);
    GGUF quants with a measured file (`sizes`, requests.measured_bytes) are sized from it.
    The rows are a function of that single-device request whatever quant was sized
    (sweeps.any_quant), so they are kept in the shared cache under it (content-keyed) and
    setups that differ only in GPU count, offload or quant share them; the smallest card
    of each quant (`cards`) is looked up per page."""
    request = sizing.request
    single = replace(
        request,
        device=replace(request.device, count=1),
        workload=replace(request.workload, offload=Offload()),
    )
    files = dict(sizes) if request.weights.format == "gguf" else {}
    rows = remembered_content(
        "quant-matrix",
        (any_quant(single), tuple(sorted(files.items()))),
        lambda: _matrix_rows(single, files),
    )
    return [replace(row, card=cards.by_quant.get(row.quant)) for row in rows]


def _matrix_rows(single: Request, files: Mapping[str, int]) -> tuple[QuantRow, ...]:
    quants = MATRIX_GGUF_QUANTS if single.weights.format == "gguf" else HF_FORMATS
    rows = sweep(single, [single.device], sizeable_quants(single, quants), measured_bytes=files)
    return tuple(
        QuantRow(
            quant=row.quant,
            weights_bytes=row.weights_bytes,
            per_device_bytes=row.per_device_bytes,
            verdict=row.verdict,
            decode_tokens_per_s=(
                None if row.verdict == "does_not_fit" else row.decode_tokens_per_s
            ),
            measured=row.quant in files,
            card=None,
        )
        for row in rows
    )


def context_points(limit: int, start: int = 4096) -> list[int]:
    """4K, 8K, ... (powers of two) below the model's maximum, which closes the list."""
    points = []
    tokens = start
    while tokens < limit:
        points.append(tokens)
        tokens *= 2
    return [*points, limit]


@dataclass(frozen=True)
class ContextPoint:
    context_tokens: int
    per_device_bytes: int
    usable_bytes_per_device: int
    verdict: str


def memory_by_context(sizing: Sizing, limit: int) -> list[ContextPoint]:
    """Per-device memory at each context point up to `limit`. One card without offload is
    exactly what sweep computes; other setups need the full estimate at each point.
    Every point sets its own context, so the points are a function of the request without
    its context: they are kept in the shared cache under that (content-keyed), and setups
    that differ only in context (a new context is the commonest new setup) share them."""
    request = sizing.request
    anywhere = replace(request, workload=replace(request.workload, context_tokens=0))
    return remembered_content(
        "context-points", (anywhere, limit), lambda: _memory_by_context(request, limit)
    )


def _memory_by_context(request: Request, limit: int) -> list[ContextPoint]:
    single = request.device.count == 1 and not offloads(request)
    out = []
    for tokens in context_points(limit):
        at = replace(request, workload=replace(request.workload, context_tokens=tokens))
        if single:
            row = sweep(at, [request.device], [request.weights.name])[0]
            point = ContextPoint(
                tokens, row.per_device_bytes, row.usable_bytes_per_device, row.verdict
            )
        else:
            result = run_estimate(at)
            point = ContextPoint(
                tokens,
                result.per_device_bytes,
                result.usable_bytes_per_device,
                result.fit.verdict,
            )
        out.append(point)
    return out


@dataclass(frozen=True)
class KvAlternative:
    """The sized setup with another KV cache type."""

    kv: str
    kv_cache_bytes: int
    saved_bytes: int  # against the sized setup's cache
    verdict: str
    max_context_tokens: int
    max_concurrent_sequences: int


def kv_alternatives(sizing: Sizing) -> list[KvAlternative]:
    """The same configuration with a quantized KV cache: q8_0 and q4_0 for llama.cpp-family
    engines, fp8 for vLLM-like ones (estimator.engines.quantized_kv_types)."""
    request = sizing.request
    out = []
    for dtype in quantized_kv_types(request.engine.name):
        if dtype == request.workload.kv_cache_dtype:
            continue
        other = replace(request, workload=replace(request.workload, kv_cache_dtype=dtype))
        try:
            result = run_estimate(check_request(other))
        except RequestError:
            continue
        out.append(
            KvAlternative(
                kv=dtype,
                kv_cache_bytes=result.kv_cache_bytes,
                saved_bytes=sizing.result.kv_cache_bytes - result.kv_cache_bytes,
                verdict=result.fit.verdict,
                max_context_tokens=result.max_context_tokens,
                max_concurrent_sequences=result.max_concurrent_sequences,
            )
        )
    return out


@dataclass(frozen=True)
class FinetuneRow(FinetuneEstimate):
    """Training memory of one method on the sized devices, and the catalog card with the
    least memory whose usable bytes hold its per-device share (None: no card does)."""

    card: Accelerator | None = None


FINETUNE_METHODS = ("qlora", "lora", "full")  # the order the page lists them


def finetune_memory(sizing: Sizing, cards: CardChoice) -> list[FinetuneRow]:
    """Training memory for QLoRA, LoRA and full fine-tuning on the sized devices (the
    estimator's finetune section at its defaults: rank 16, batch 1, 2,048 tokens)."""
    spec = estimator_cache.model_spec(sizing.request.model.hf_config_json)
    usable = sizing.result.usable_bytes_per_device
    rows = []
    for method in FINETUNE_METHODS:
        memory = finetune_estimate(FinetuneSpec(method=method), spec, sizing.request, usable)
        card = cards.smallest_holding(memory.per_device_bytes)
        rows.append(FinetuneRow(**vars(memory), card=card))
    return rows


def make_it_fit(sizing: Sizing) -> list[PlanStep]:
    """estimator.recommend's ranked single changes that bring the setup within memory
    (empty when it fits with the engine's defaults; a setup within the engine's default
    margin gets them too, next to its start flags)."""
    if sizing.fits and not sizing.result.fit.within_default_margin:
        return []
    return recommend.make_it_fit(sizing.request, sizing.result, run_estimate, sizing.model_layers)
