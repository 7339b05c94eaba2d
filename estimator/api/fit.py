"""The fit verdict of a sized setup: its need against what the device gives the engine.

Shared by run_estimate and the sweep (estimator.api.sweep) so both judge alike. The
formulas are estimator.memory's (fit_verdict, max_usable_bytes_per_device,
start_settings); this module adds the paged engines' start-up rule: their KV block pool
must hold one sequence of the context (estimator.api.run.paged_start_fails).
"""

from __future__ import annotations

import math

from estimator import memory
from estimator.api.schema import Device, Fit, Request, metal_working_set
from estimator.units import GB


def paged_need_bytes(request: Request, fixed_bytes: int, paged_bytes_per_token: float) -> int:
    """The least a vLLM-like engine needs per device to start: weights + overhead
    (`fixed_bytes`) + a block pool for one sequence of the context,
    ceil(context / block_size) x block_size x bytes per token (the pool's own rounding,
    estimator.api.run.block_pool_tokens); 0 for the llama family (paged_bytes_per_token 0).
    """
    if paged_bytes_per_token <= 0:
        return 0
    block = max(1, request.engine.block_size)
    blocks = -(-request.workload.context_tokens // block)
    return fixed_bytes + math.ceil(blocks * block * paged_bytes_per_token)


def judged_need_bytes(
    per_device_bytes: int, start_need_bytes: int, starts_at_default: bool, usable_bytes: int
) -> int:
    """The need judge_fit judges: max(per-device bytes, start need), and above the default
    budget (usable + 1) when the paged pool cannot hold one sequence there."""
    need = max(per_device_bytes, start_need_bytes)
    return need if starts_at_default else max(need, usable_bytes + 1)


def fits_within(need_bytes: int, usable_bytes: int, max_usable_bytes: int) -> bool:
    """Whether memory.fit_verdict's verdict of `need_bytes` is anything but does_not_fit:
    the need is within its limit, max(max_usable, usable). judge_fit's verdict without
    building the Fit, for a sweep that only asks whether a cell fits (sweep.fit_table)."""
    return need_bytes <= max(max_usable_bytes, usable_bytes)


def device_budgets(request: Request, device: Device) -> tuple[int, int]:
    """(usable, the most it can give) bytes of one device under the request's engine:
    memory.usable_bytes_per_device and memory.max_usable_bytes_per_device of its memory
    (Metal's working set on Apple devices)."""
    engine = request.engine
    total = round(device.memory_gb * GB)
    apple = metal_working_set(device)
    usable = memory.usable_bytes_per_device(
        engine=engine.name,
        total_bytes=total,
        unified_memory=apple,
        gpu_memory_utilization=engine.gpu_memory_utilization,
    )
    top = memory.max_usable_bytes_per_device(
        engine=engine.name,
        total_bytes=total,
        unified_memory=apple,
        gpu_memory_utilization=engine.gpu_memory_utilization,
    )
    return usable, top


def judge_fit(
    request: Request,
    device: Device,
    *,
    per_device_bytes: int,
    start_need_bytes: int,
    starts_at_default: bool = True,
) -> Fit:
    """The result's fit: per_device_bytes against the default budget for the reserve
    figures; the start need (per_device_bytes, or paged_need_bytes when larger; above the
    default budget when the pool cannot hold one sequence there, `starts_at_default`
    False) against the default budget and the most the device can give
    (memory.fit_verdict) for the verdict; memory.start_settings for a need within the
    default margin. A setup that fails only the paged rule has utilisation 1.0."""
    engine = request.engine
    total = round(device.memory_gb * GB)
    apple = metal_working_set(device)
    usable, top = device_budgets(request, device)
    need = judged_need_bytes(per_device_bytes, start_need_bytes, starts_at_default, usable)
    plain = memory.fit_verdict(per_device_bytes, usable, top)
    judged = memory.fit_verdict(need, usable, top)
    settings = memory.start_settings(
        engine=engine.name,
        need_bytes=need,
        total_bytes=total,
        unified_memory=apple,
        gpu_memory_utilization=engine.gpu_memory_utilization,
        context_tokens=request.workload.context_tokens * request.workload.concurrent_sequences,
    )
    paged_only = judged.verdict == "does_not_fit" and plain.verdict != "does_not_fit"
    return Fit(
        judged.verdict,
        plain.reserve_bytes,
        plain.reserve_fraction,
        1.0 if paged_only else plain.utilisation,
        judged.margin_bytes,
        judged.within_default_margin,
        settings.flags,
        settings.memory_share,
        settings.wired_limit_mb,
    )
