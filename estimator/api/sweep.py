"""Many devices x many quants for one model: the per-model and per-quant work once, then a
few arithmetic operations per (device, quant) pair.

`sweep` gives the same per-device bytes, verdict and decode speed as `run_estimate` on the
equivalent single-device request (tests/estimator/test_api_sweep.py checks it); it leaves
out what a table of thousands of cells does not show (explanation, capacity searches,
prefill, recommendations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from estimator import memory, serving, speed
from estimator.api import cache
from estimator.api.fit import (
    device_budgets,
    fits_within,
    judge_fit,
    judged_need_bytes,
    paged_need_bytes,
)
from estimator.api.run import (
    block_pool_tokens,
    check_model,
    engine_overhead,
    kv_cache,
    paged_bytes_per_token,
    paged_start_fails,
)
from estimator.api.schema import Device, Request, WeightsSpec, metal_working_set
from estimator.api.speeds import (
    decode_work,
    device_for_speed,
    serving_decode,
    serving_step_inputs,
)
from estimator.engines import llama_family
from estimator.factors import SpeedFactors
from estimator.model import ModelSpec
from estimator.units import GB


@dataclass(frozen=True)
class SweepRow:
    device_index: int
    quant: str
    weights_bytes: int
    per_device_bytes: int
    usable_bytes_per_device: int
    verdict: str
    decode_tokens_per_s: float
    decode_low_tokens_per_s: float = 0.0  # speed.decode_bounds, as run_estimate gives them
    decode_high_tokens_per_s: float = 0.0
    speed_calibrated: bool = True  # as Result.speed_calibrated


def _weights_spec(request: Request, quant: str, file_bytes: int | None = None) -> WeightsSpec:
    if request.weights.format == "gguf":
        return WeightsSpec(
            "gguf", quant=quant, imatrix=request.weights.imatrix, file_bytes=file_bytes
        )
    return WeightsSpec(
        "hf", dtype=quant, group_size=request.weights.group_size, file_bytes=file_bytes
    )


def sweep(
    request: Request,
    devices: Sequence[Device],
    quants: Sequence[str],
    *,
    measured_bytes: Mapping[str, int] | None = None,
    first_fit: bool = False,
) -> list[SweepRow]:
    """Evaluate `request` on every single device (count 1, no offload, no tensor parallelism)
    for every quant: per_device = weights + KV + engine overhead; verdict by
    fit.judge_fit (as run_estimate); decode by speed.decode_speed. Raises RequestError as
    run_estimate does.

    measured_bytes: quant -> measured file size; those quants are sized from the measured
    file (as a request with weights.file_bytes is), the others are computed.
    first_fit: one row per device, for a ladder (quants least compressed first): the first
    quant whose verdict is not does_not_fit, else the last quant; the same row sweep gives
    that cell, without the decode speeds of the rows a ladder skips.
    """
    single = replace(request, workload=replace(request.workload, tensor_parallel=1))
    model = cache.model_spec(request.model.hf_config_json)
    check_model(single, model)
    shared = _shared(single, model)
    per_quant = _per_quant(single, model, quants, measured_bytes or {})
    return [
        row
        for index, device in enumerate(devices)
        for row in _device_rows(
            single,
            model,
            shared,
            [_first_fitting(single, shared, per_quant, device)] if first_fit else per_quant,
            index,
            device,
        )
    ]


def _first_fitting(
    single: Request, shared: _Shared, per_quant: Sequence[_Quant], device: Device
) -> _Quant:
    """The first quant that fits the device (_fits), else the last."""
    usable, top = device_budgets(single, device)
    return next(
        (q for q in per_quant if _fits(single, shared, q.weights_bytes, usable, top)),
        per_quant[-1],
    )


@dataclass(frozen=True)
class FitTable:
    """What a card chooser reads of a sweep: per quant its weights and per-device need
    (weights + KV + engine overhead, as SweepRow.per_device_bytes), per device the bytes
    it gives the engine, and per device and quant whether it fits (fit[d][q]: the
    verdict sweep and run_estimate give is not does_not_fit)."""

    quants: tuple[str, ...]
    weights_bytes: tuple[int, ...]
    need_bytes: tuple[int, ...]
    usable_bytes: tuple[int, ...]
    fits: tuple[tuple[bool, ...], ...]


def fit_table(
    request: Request,
    devices: Sequence[Device],
    quants: Sequence[str],
    *,
    measured_bytes: Mapping[str, int] | None = None,
) -> FitTable:
    """sweep's memory half: the same needs and fit verdicts without the decode speeds.
    The need of a quant is the same on every device, and a device's default budget and
    most it can give (usable_bytes_per_device, max_usable_bytes_per_device) the same for
    every quant, so a cell costs one comparison (fit.fits_within of fit.judged_need_bytes;
    the paged engines add their start rule, as _verdict). Raises RequestError as sweep."""
    single = replace(request, workload=replace(request.workload, tensor_parallel=1))
    model = cache.model_spec(request.model.hf_config_json)
    check_model(single, model)
    shared = _shared(single, model)
    measured = measured_bytes or {}
    weights = tuple(
        cache.weights(
            single.model.hf_config_json, _weights_spec(single, q, measured.get(q))
        ).total_bytes
        for q in quants
    )
    needs = tuple(w + shared.kv_bytes + shared.overhead_bytes for w in weights)
    usable_list: list[int] = []
    fits: list[tuple[bool, ...]] = []
    for device in devices:
        usable, top = device_budgets(single, device)
        usable_list.append(usable)
        if not shared.paged_per_token:  # the llama family: the need is what is judged
            fits.append(tuple(fits_within(need, usable, top) for need in needs))
            continue
        fits.append(tuple(_fits(single, shared, w, usable, top) for w in weights))
    return FitTable(tuple(quants), weights, needs, tuple(usable_list), tuple(fits))


def _fits(single: Request, shared: _Shared, weights_bytes: int, usable: int, top: int) -> bool:
    """Whether a cell's verdict (_verdict) is anything but does_not_fit, without building
    the Fit: the need judge_fit judges (fit.judged_need_bytes, the paged start rule
    included) within fit.fits_within's limit."""
    need = weights_bytes + shared.kv_bytes + shared.overhead_bytes
    start_need, starts = _paged_start(single, shared, weights_bytes, usable)
    return fits_within(judged_need_bytes(need, start_need, starts, usable), usable, top)


@dataclass(frozen=True)
class _Shared:
    """What every cell of a sweep shares: the KV cache and engine overhead of the request's
    context and batch, the KV block pool's bytes per token (vLLM-like engines; 0 for the
    llama.cpp family) and the mean decode depth."""

    kv_bytes: int
    overhead_bytes: int
    paged_per_token: float
    depth_tokens: float


@dataclass(frozen=True)
class _Quant:
    """One quant's weights, computed once for every device."""

    quant: str
    spec: WeightsSpec
    weights_bytes: int
    work: speed.DecodeWork


def _shared(single: Request, model: ModelSpec) -> _Shared:
    workload, engine = single.workload, single.engine
    kv_bytes = kv_cache(
        single, model, workload.context_tokens, workload.concurrent_sequences
    ).total_bytes
    overhead_bytes = engine_overhead(
        single, model, workload.context_tokens, workload.concurrent_sequences
    ).total_bytes
    paged_per_token = (
        0.0 if llama_family(engine.name) else paged_bytes_per_token(single, model, "none")
    )
    depth = speed.mean_decode_depth(workload.prompt_tokens, workload.output_tokens)
    return _Shared(kv_bytes, overhead_bytes, paged_per_token, depth)


def _per_quant(
    single: Request, model: ModelSpec, quants: Sequence[str], measured: Mapping[str, int]
) -> list[_Quant]:
    out = []
    for quant in quants:
        spec = _weights_spec(single, quant, measured.get(quant))
        wb = cache.weights(single.model.hf_config_json, spec)
        out.append(_Quant(quant, spec, wb.total_bytes, decode_work(model, wb, single, 0)))
    return out


def _device_rows(
    single: Request,
    model: ModelSpec,
    shared: _Shared,
    per_quant: Sequence[_Quant],
    index: int,
    device: Device,
) -> list[SweepRow]:
    """One device's row for every quant: per_device = weights + KV + overhead, the verdict
    (_verdict) and the decode speed as run_estimate gives it."""
    engine = single.engine
    usable = memory.usable_bytes_per_device(
        engine=engine.name,
        total_bytes=round(device.memory_gb * GB),
        unified_memory=metal_working_set(device),
        gpu_memory_utilization=engine.gpu_memory_utilization,
    )
    target = device_for_speed(device)
    factors = _factors(engine.name, engine.backend, target.device_class, model.is_moe)
    calibrated = speed.measured_group(
        engine.name, engine.backend, target.device_class, model.is_moe, device.vendor
    )
    family = speed.family_range("decode", target, engine.name)
    rows = []
    for q in per_quant:
        need = q.weights_bytes + shared.kv_bytes + shared.overhead_bytes
        verdict = _verdict(single, device, shared, q.weights_bytes, need, usable)
        cell = replace(single, device=device, weights=q.spec)
        inputs = serving_step_inputs(model, q.work, cell, target, speed.Parallelism(), 0)
        if inputs is not None:  # vLLM-like engines: the batched serving model, as run
            decode = serving_decode(inputs, cell)[0].per_sequence_tokens_per_s
            calibrated = serving.serving_calibrated(engine.name, engine.backend)
        else:  # speed.decode_speed's central estimate, the factor lookup hoisted out
            step, _ = speed.decode_step_seconds(
                q.work,
                target,
                factors,
                batch=single.workload.concurrent_sequences,
                depth_tokens=shared.depth_tokens,
                correction=speed.speed_multiplier(
                    "decode", engine.name, engine.backend, target, q.quant
                ),
            )
            decode = speed.decode_bounds(1.0 / step, factors, family)
        rows.append(
            SweepRow(
                index,
                q.quant,
                q.weights_bytes,
                need,
                usable,
                verdict,
                decode.estimate,
                decode.low,
                decode.high,
                calibrated,
            )
        )
    return rows


def _verdict(
    single: Request, device: Device, shared: _Shared, weights_bytes: int, need: int, usable: int
) -> str:
    """fit.judge_fit's verdict of the need (weights + KV + overhead). vLLM-like engines:
    the KV block pool must also hold one max_model_len sequence (run.paged_start_fails,
    fit.paged_need_bytes), sized as run.kv_capacity_tokens sizes it."""
    start_need, starts = _paged_start(single, shared, weights_bytes, usable)
    return judge_fit(
        single,
        device,
        per_device_bytes=need,
        start_need_bytes=start_need,
        starts_at_default=starts,
    ).verdict


def _paged_start(
    single: Request, shared: _Shared, weights_bytes: int, usable: int
) -> tuple[int, bool]:
    """(start need, whether the pool holds one sequence at the default budget) of a cell:
    fit.paged_need_bytes of weights + overhead, and run.paged_start_fails of the block
    pool left in the usable bytes (run.block_pool_tokens); (0, True) for the llama family."""
    if not shared.paged_per_token:
        return 0, True
    fixed = weights_bytes + shared.overhead_bytes
    capacity = block_pool_tokens(usable - fixed, shared.paged_per_token, single.engine.block_size)
    return (
        paged_need_bytes(single, fixed, shared.paged_per_token),
        not paged_start_fails(single, capacity),
    )


@lru_cache(maxsize=64)
def _factors(engine: str, backend: str, device_class: str, moe: bool) -> SpeedFactors:
    return speed.resolve_factors(engine, backend, device_class, moe)
