"""Decode and prefill speed with calibrated low/high bounds.

Everything here takes plain numbers (bytes, parameters, GB/s, TFLOPS) so it does not
depend on how the caller obtained them. The efficiency factors come from
`data/calibration.json` (read by `estimator.factors`; `python -m estimator.calibration`
fits it on `data/validation/throughput.csv`); pass `factors` explicitly to override them.

Decode model (one step = one token for each of `batch` sequences):

    memory_s  = (weight bytes read + batch x KV bytes read at the current depth)
                / (device bandwidth x bandwidth_share)
    compute_s = 2 x active params x batch / (fp16 TFLOPS x decode_mfu)
    step_s    = memory_s + compute_s + host_s + comm_s
                + decode_overhead_s x n_layers / 32 (overhead_scale)
                (+ moe_decode_overhead_s for MoE models)

Memory and compute are ADDED, not max()-ed: llama-batched-bench rows in throughput.csv
(DGX Spark, M2 Ultra) slow down per step by 20-150 % from batch 1 to 8, although 8 tokens
of compute at any plausible MFU would hide under the memory time; a max() cannot follow
that, the sum can (with a fitted decode_mfu that then reads as "effective" MFU). At
batch 1 the compute term is a few percent of the step; at large batch it dominates and
the aggregate saturates at TFLOPS x decode_mfu / (2 x active params), as a roofline does.

Prefill model (prefill_seconds_per_token, one prompt token):

    seconds = (FLOPs x format_factor / (TFLOPS x prefill_mfu)
               + active params x prefill_s_per_param) / tensor_parallel
    FLOPs   = 2 x active params + 4 x layers x n_heads x head_dim x mean context

format_factor is 1 for quantized weights and the fitted F16 / BF16 factor for llama.cpp.
TFLOPS for llama.cpp on an NVIDIA board with a known power is min(listed, k x board W)
(power_capped_tflops, k fitted: "prefill_tflops_per_watt").
For MoE models under the llama.cpp family, every ubatch also reads the experts it touches
beyond the active ones (moe_stream_bytes) at bandwidth x the expert stream share:
+ stream bytes / (bandwidth x share x min(n_ubatch, prompt)) (expert_stream_seconds_per_token).
Bounds of both: estimate x the quantiles of the group's whole-device hold-out ratios
measured / predicted (calibration.json).

`host_s` is the CPU-offloaded part (read at host RAM bandwidth x the CPU backend's share,
additive because llama.cpp runs the layers one after another). `comm_s` is the
tensor-parallel all-reduce cost. Bandwidths are decimal GB/s (10^9 bytes per second).

For the local engines both speeds are then multiplied by the fitted corrections of the
device's hardware family and the weights kind (corrections.speed_multiplier) and bounded
by the family's hold-out range (corrections.family_range).

Modules: devices (Device, Parallelism, device class, old-generation factor), families
(hardware families by memory technology and generation, weights kinds), corrections (the
family / weights-kind / vendor / era corrections and per-family ranges), groups (which
calibrated factors apply), decode (the decode model), prefill (the prefill model and
TTFT), compute_rates (FP16 rates imputed from unit counts and clocks).
"""

from __future__ import annotations

from estimator.speed.corrections import (
    FamilyRange,
    family_range,
    is_local_engine,
    speed_multiplier,
)
from estimator.speed.decode import (
    DecodeSpeed,
    DecodeWork,
    allreduce_seconds,
    comm_seconds_per_step,
    compute_seconds_per_step,
    decode_bounds,
    decode_speed,
    decode_step_seconds,
    expert_coverage,
    kv_bytes_read,
    mean_decode_depth,
    memory_seconds_per_step,
    overhead_scale,
    step_range,
    weight_bytes_per_step,
)
from estimator.speed.devices import (
    TFLOP,
    Device,
    Parallelism,
    arch_class,
    architecture_factor,
    device_class_for,
)
from estimator.speed.families import device_family, is_current, weights_kind
from estimator.speed.groups import (
    group_candidates,
    measured_group,
    normalize_backend,
    normalize_engine,
    resolve_factors,
    with_factors,
)
from estimator.speed.prefill import (
    DEFAULT_HOST_LINK_GBPS,
    OP_OFFLOAD_MIN_BATCH,
    PrefillSpeed,
    expert_stream_seconds_per_token,
    moe_stream_bytes,
    offload_stream_seconds_per_token,
    power_capped_tflops,
    prefill_compute_tflops,
    prefill_flops_per_token,
    prefill_format_factor,
    prefill_seconds_per_token,
    prefill_speed,
    streams_per_ubatch,
    ttft_floor_seconds,
    ttft_seconds,
    weights_family,
)

__all__ = [
    "DEFAULT_HOST_LINK_GBPS",
    "OP_OFFLOAD_MIN_BATCH",
    "TFLOP",
    "DecodeSpeed",
    "DecodeWork",
    "Device",
    "FamilyRange",
    "Parallelism",
    "PrefillSpeed",
    "allreduce_seconds",
    "arch_class",
    "architecture_factor",
    "comm_seconds_per_step",
    "compute_seconds_per_step",
    "decode_bounds",
    "decode_speed",
    "decode_step_seconds",
    "device_class_for",
    "device_family",
    "expert_coverage",
    "expert_stream_seconds_per_token",
    "family_range",
    "group_candidates",
    "is_current",
    "is_local_engine",
    "kv_bytes_read",
    "mean_decode_depth",
    "measured_group",
    "memory_seconds_per_step",
    "moe_stream_bytes",
    "normalize_backend",
    "normalize_engine",
    "offload_stream_seconds_per_token",
    "overhead_scale",
    "power_capped_tflops",
    "prefill_compute_tflops",
    "prefill_flops_per_token",
    "prefill_format_factor",
    "prefill_seconds_per_token",
    "prefill_speed",
    "resolve_factors",
    "speed_multiplier",
    "step_range",
    "streams_per_ubatch",
    "ttft_floor_seconds",
    "ttft_seconds",
    "weight_bytes_per_step",
    "weights_family",
    "weights_kind",
    "with_factors",
]
