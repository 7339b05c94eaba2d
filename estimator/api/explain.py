"""The structured "explanation" of a result: one entry per figure, numbers not text.

Each entry says which formula produced the figure, with the numbers that went in, the
value that came out, and the module the formula lives in. The web pages render these;
nothing here computes a new figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator import kv as kvmod
from estimator import speed
from estimator.api.placement import Budget, KVPlacement, Placement
from estimator.api.schema import Explanation, Request, Result
from estimator.api.speeds import weights_name
from estimator.factors import prefill_tflops_per_watt
from estimator.model import ModelSpec
from estimator.weights import WeightsBreakdown

if TYPE_CHECKING:
    from estimator.api.speeds import Speeds


def _kv_entry(request: Request, model: ModelSpec, kv: KVPlacement) -> list[Explanation]:
    kv_dtype = request.engine.type_k or request.workload.kv_cache_dtype
    cache = kv.cache
    if model.mla is not None:
        formula = "layers x (kv_lora_rank + qk_rope_head_dim) x bytes"
        inputs: dict[str, float | int | str | bool | None] = {
            "layers": model.n_layers,
            "kv_lora_rank": model.mla.kv_lora_rank,
            "qk_rope_head_dim": model.mla.qk_rope_head_dim,
            "mla_layout": cache.mla_layout,
        }
    else:
        formula = "sum over layers of (kv_heads x head_dim_k + kv_heads x head_dim_v) x bytes"
        inputs = {
            "layers": model.n_layers,
            "kv_heads": model.n_kv_heads,
            "head_dim": model.head_dim,
        }
    inputs["bytes_per_element"] = kvmod.row_bytes(kv_dtype, 32) / 32
    inputs["kv_cache_dtype"] = kv_dtype
    return [
        Explanation(
            "kv_cache_bytes_per_token",
            formula,
            inputs,
            cache.bytes_per_token,
            "estimator/kv/rows.py kv_bytes_per_token",
        ),
        Explanation(
            "kv_cache_bytes",
            "sum over layers of cells(layer) x (K + V row bytes) + recurrent state",
            {
                "context_tokens": cache.context_tokens,
                "sequences": cache.sequences,
                "cells": cache.cells,
                "bytes_per_token": cache.bytes_per_token,
                "state_bytes": cache.state_bytes,
                "engine": cache.engine,
            },
            cache.total_bytes,
            "estimator/kv/cache.py kv_cache_bytes",
        ),
    ]


def _memory_entries(
    request: Request,
    wb: WeightsBreakdown,
    place: Placement,
    kv: KVPlacement,
    room: Budget,
    result: Result,
) -> list[Explanation]:
    return [
        Explanation(
            "weights_bytes",
            "sum over tensors of elements x bits of its type / 8",
            {
                "params_total": result.params_total,
                "bits_per_weight": wb.bits_per_weight,
                "format": request.weights.format,
                "name": request.weights.name,
            },
            wb.total_bytes,
            "estimator/weights/breakdown.py weights_breakdown",
        ),
        Explanation(
            "per_device_weights_bytes",
            "(weights - offloaded + multimodal - replicated) / TP + replicated; "
            "or / devices for a layer split",
            {
                "weights_bytes": wb.total_bytes,
                "offloaded_bytes": place.offloaded_bytes,
                "multimodal_bytes": place.multimodal_bytes,
                "replicated_bytes": wb.replicated_bytes,
                "tensor_parallel": request.workload.tensor_parallel,
                "devices": request.device.count,
                "split": place.split,
            },
            place.per_device_weights_bytes,
            "estimator/api/run.py place_weights",
        ),
        Explanation(
            "overhead_bytes",
            "sum of the engine's parts, per device",
            {**room.overhead.breakdown, "outside_budget_bytes": room.overhead.outside_budget_bytes},
            room.overhead.total_bytes,
            "estimator/memory.py engine_overhead",
        ),
        Explanation(
            "usable_bytes_per_device",
            "engine rule applied to the device memory",
            {
                "memory_gb": request.device.memory_gb,
                "engine": request.engine.name,
                "memory_kind": request.device.memory_kind,
                "gpu_memory_utilization": request.engine.gpu_memory_utilization,
            },
            room.usable_bytes,
            "estimator/memory.py usable_bytes_per_device",
        ),
        Explanation(
            "per_device_bytes",
            "per-device weights + per-device KV + overhead",
            {
                "per_device_weights_bytes": place.per_device_weights_bytes,
                "per_device_kv_bytes": kv.per_device_bytes,
                "overhead_bytes": room.overhead.total_bytes,
            },
            result.per_device_bytes,
            "estimator/api/run.py run_estimate",
        ),
        Explanation(
            "kv_cache_capacity_tokens",
            "(usable - per-device weights - overhead) / KV bytes per token per device",
            {"kv_budget_bytes": room.kv_budget_bytes, "block_size": request.engine.block_size},
            result.kv_cache_capacity_tokens,
            "estimator/api/run.py kv_capacity_tokens",
        ),
    ]


def _correction(kind: str, request: Request, speeds: Speeds) -> float:
    """speed.speed_multiplier as the speeds applied it (1 for the serving model)."""
    if speeds.serving_inputs is not None:
        return 1.0
    engine = request.engine
    return speed.speed_multiplier(
        kind,
        engine.name,
        engine.backend,
        speeds.device,
        weights_name(request),
        moe=speeds.work.is_moe,
    )


def _speed_entries(request: Request, speeds: Speeds, result: Result) -> list[Explanation]:
    work = speeds.work
    out = [
        Explanation(
            "decode_tokens_per_s",
            "1 / ((bytes read / (bandwidth x share) + 2 x active params x batch / "
            "(TFLOPS x MFU) + host + interconnect + per-step overhead x layers / 32) "
            "x old-GPU factor) x family / weights-kind correction",
            {
                "weight_bytes_per_token": work.weight_bytes_per_token,
                "kv_bytes_per_token": work.kv_bytes_per_token,
                "offloaded_bytes_per_token": work.offloaded_bytes_per_token,
                "mean_depth_tokens": request.workload.prompt_tokens
                + request.workload.output_tokens / 2,
                "bandwidth_gbps": request.device.bandwidth_gbps,
                "batch": request.workload.concurrent_sequences,
                "step_s": speeds.decode.step_s,
                "memory_bound": speeds.decode.memory_bound,
                "device_class": speeds.device.device_class,
                "architecture_factor": speed.architecture_factor(speeds.device.architecture),
                "hardware_family": speeds.device.family,
                "family_correction": _correction("decode", request, speeds),
            },
            result.decode_tokens_per_s.estimate,
            "estimator/speed/decode.py decode_speed",
        )
    ]
    if result.prefill_tokens_per_s is not None and result.ttft_s is not None:
        out.append(
            Explanation(
                "prefill_tokens_per_s",
                "TP / (FLOPs per prompt token / (TFLOPS x MFU) + expert bytes per ubatch / "
                "(bandwidth x stream share x ubatch)) x family / weights-kind / era "
                "correction; llama.cpp on NVIDIA: TFLOPS at most board W x tflops_per_watt",
                {
                    "tflops": speeds.compute_tflops,
                    "params_active": work.params_active,
                    "prompt_tokens": request.workload.prompt_tokens,
                    "expert_bytes_per_ubatch": speeds.stream_bytes,
                    "ubatch_tokens": min(request.engine.n_ubatch, request.workload.prompt_tokens),
                    "tdp_w": request.device.tdp_w,
                    "tflops_per_watt": prefill_tflops_per_watt(),
                    "family_correction": _correction("prefill", request, speeds),
                },
                result.prefill_tokens_per_s.estimate,
                "estimator/speed/prefill.py prefill_speed",
            )
        )
        out.append(
            Explanation(
                "ttft_s",
                "prompt_tokens / prefill tokens/s + one decode step + the engine's TTFT floor",
                {
                    "prompt_tokens": request.workload.prompt_tokens,
                    "prefill_tokens_per_s": result.prefill_tokens_per_s.estimate,
                },
                result.ttft_s.estimate,
                "estimator/speed/prefill.py ttft_seconds",
            )
        )
    return out


def explanation(
    request: Request,
    model: ModelSpec,
    wb: WeightsBreakdown,
    place: Placement,
    kv: KVPlacement,
    room: Budget,
    speeds: Speeds,
    result: Result,
) -> tuple[Explanation, ...]:
    """Explanation entries for the main figures of `result`, in reading order."""
    params = Explanation(
        "params_total",
        "sum of text-model tensor elements (tied head counted once)",
        {
            "layers": model.n_layers,
            "hidden_size": model.hidden_size,
            "vocab_size": model.vocab_size,
            "experts": model.n_experts,
        },
        model.params_total,
        "estimator/model parse_hf_config",
    )
    return (
        params,
        *_memory_entries(request, wb, place, kv, room, result),
        *_kv_entry(request, model, kv),
        *_speed_entries(request, speeds, result),
    )
