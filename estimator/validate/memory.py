"""Engine memory: llama.cpp's KV cache and compute buffer from its load logs
(llamacpp_memory.csv), vLLM's per-rank weights and KV tokens (vllm_memory.csv)."""

from __future__ import annotations

from typing import Any

from estimator.units import GB, GIB, MIB
from estimator.validate.data import base_request, config_for, mib, read_csv, run
from estimator.validate.metrics import Metric, Target


def busiest_compute_buffer(text: str) -> float | None:
    """Largest device compute buffer in 'CUDA0=17.14;CUDA_Host=17.14' (host copies left out,
    unless the run was CPU only)."""
    if not text:
        return None
    entries = {}
    for part in text.split(";"):
        if "=" in part:
            name, value = part.split("=", 1)
            try:
                entries[name.strip()] = float(value)
            except ValueError:
                continue
    devices = {k: v for k, v in entries.items() if not k.endswith("_Host") and k != "CPU"}
    chosen = devices or {k: v for k, v in entries.items() if k == "CPU"}
    return max(chosen.values()) * MIB if chosen else None


def _llama_kv_types(row: dict[str, str]) -> tuple[str, str | None, str | None]:
    """(type_k, type_v, mla_layout) from the log's type columns and MLA mode."""
    type_k = row["type_k"].replace("c^KV", "").strip() or "f16"
    type_v = row["type_v"].strip() or None
    mla = row["mla_attn"].strip()
    if row["arch"] != "deepseek2":
        return type_k, type_v, None
    if mla in ("2", "3") or row["type_k"].startswith("c^KV"):
        return type_k, None, "latent"
    if row["n_head_kv"] == "1":  # llama.cpp's MLA cache: latent K (576) plus V (512)
        return type_k, type_v, "latent_kv"
    return type_k, type_v, "full"


def llamacpp_request(row: dict[str, str]) -> dict[str, Any] | str:
    """The request for a llamacpp_memory.csv row (config by model, else by arch), or why
    there is none."""
    config = config_for(row["model"]) or config_for(row["arch"])
    if config is None:
        return "no config for the model"
    type_k, type_v, layout = _llama_kv_types(row)
    engine: dict[str, Any] = {
        "name": "llama.cpp",
        "n_ubatch": int(row["n_ubatch"] or 512),
        "flash_attention": row["flash_attn"] == "1",
        "type_k": type_k,
    }
    if type_v:
        engine["type_v"] = type_v
    if layout:
        engine["mla_layout"] = layout
    if row["n_swa"] not in ("", "0") and "ik_llama" in row["engine"]:
        engine["swa_full"] = True  # the fork caches every layer in full (no iSWA cache)
    n_ctx = int(row["n_ctx"])
    workload = {"context_tokens": n_ctx, "prompt_tokens": 0, "output_tokens": 1}
    return base_request(
        config, {"format": "gguf", "quant": "Q4_K_M"}, engine=engine, workload=workload
    )


def fully_placed(row: dict[str, str]) -> bool:
    """All layers on the devices (e.g. '62/62', or no offload column for CPU runs)."""
    done, _, total = row["layers_offloaded"].partition("/")
    return not total or done == total


def compute_buffer_exclusion(row: dict[str, str]) -> str:
    """Why the row's compute buffer is no measure of the estimator's (the data's
    exclude_compute_buffer column, e.g. ik_llama.cpp's -amb chunking of the KQ matrix,
    PR #237, which mainline llama.cpp lacks); "" when it is one."""
    return row.get("exclude_compute_buffer", "").strip()


def compute_buffer_measure(row: dict[str, str]) -> float | str:
    """The busiest device's compute buffer in bytes, or why the row gives no measure."""
    measured = busiest_compute_buffer(row["compute_buffers_mib"])
    if measured is None:
        return "no compute buffer in the log"
    if not fully_placed(row):
        return "partial offload stages weights in the compute buffer"
    return compute_buffer_exclusion(row) or measured


def validate_llamacpp_memory() -> list[Metric]:
    """kv_cache_bytes vs 'KV self size' and the compute buffer vs the busiest device's
    'compute buffer size' in llama.cpp (and ik_llama.cpp) load logs."""
    kv = Metric("llamacpp_memory.csv", "kv_cache_bytes", Target(max_pct=0.5))
    compute = Metric(
        "llamacpp_memory.csv", "overhead_breakdown.compute_buffer", Target(median_pct=15.0)
    )
    for row in read_csv("llamacpp_memory.csv"):
        request = llamacpp_request(row)
        if isinstance(request, str):
            kv.skip(request)
            compute.skip(request)
            continue
        result = run(kv, request)
        if result is None:
            compute.skip("estimator refused the request")
            continue
        kv.add(result["kv_cache_bytes"], mib(row["kv_total_mib"]))
        measured = compute_buffer_measure(row)
        if isinstance(measured, str):
            compute.skip(measured)
        else:
            compute.add(result["overhead_breakdown"]["compute_buffer"], measured)
    return [kv, compute]


VLLM_DTYPES = {
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "fp16": "fp16",
    "float32": "fp32",
}


def vllm_weights(row: dict[str, str]) -> dict[str, Any] | None:
    """The weights section for a vllm_memory.csv row, None for schemes not modelled."""
    quant = row["quantization"].lower()
    model = row["model"].lower()
    if not quant:
        dtype = VLLM_DTYPES.get(row["dtype"].lower())
        return None if dtype is None else {"format": "hf", "dtype": dtype}
    if "mxfp4" in quant:
        return {"format": "hf", "dtype": "mxfp4"}
    if quant.startswith("fp8"):
        return {"format": "hf", "dtype": "fp8"}
    if "gptq" in quant or "w4a16" in model:
        return {"format": "hf", "dtype": "gptq-int4"}
    if "w8a8" in model:
        return {"format": "hf", "dtype": "w8a8"}
    return None


def vllm_request(row: dict[str, str]) -> dict[str, Any] | str:
    """The request for a vllm_memory.csv row, or why there is none."""
    config = config_for(row["model"])
    weights = vllm_weights(row)
    if config is None:
        return "no config for the model"
    if weights is None:
        return "quantization scheme not modelled"
    if not row["total_gpu_memory_gib"] or not row["max_model_len"].isdigit():
        return "log lacks total memory or max_model_len"
    tp = int(row["tp"] or 1)
    pp = int(row["pp"] or 1)
    context = int(row["max_model_len"])
    # vLLM's kv_cache_dtype "auto" follows the model dtype (4 bytes for float32).
    kv_dtype = (
        "fp8"
        if row["kv_cache_dtype"].startswith("fp8")
        else ("f32" if weights.get("dtype") == "fp32" else "f16")
    )
    engine = {
        "name": "vllm",
        "gpu_memory_utilization": float(row["gpu_memory_utilization"]),
        "block_size": int(row["block_size"] or 16),
    }
    device = {
        "memory_gb": float(row["total_gpu_memory_gib"]) * GIB / GB,
        "bandwidth_gbps": 3350.0,
        "count": tp * pp,
    }
    workload = {
        "context_tokens": context,
        "tensor_parallel": tp,
        "kv_cache_dtype": kv_dtype,
        "prompt_tokens": 0,
        "output_tokens": 1,
    }
    request = base_request(config, weights, engine=engine, workload=workload)
    request["device"] = device
    return request


def vllm_kv_tokens(row: dict[str, str]) -> float | None:
    """The log's "GPU KV cache size" in tokens; None when it printed none (or failed)."""
    if row["kv_cache_tokens"] and row["status"].startswith("ok"):
        return float(row["kv_cache_tokens"])
    return None


def validate_vllm_memory() -> list[Metric]:
    """Per-rank weights ("Model loading took X GiB") and "GPU KV cache size" tokens."""
    weights_metric = Metric("vllm_memory.csv", "per_device_weights_bytes", Target(median_pct=3.0))
    tokens_metric = Metric(
        "vllm_memory.csv", "kv_cache_capacity_tokens", Target(median_pct=5.0, p90_pct=15.0)
    )
    for row in read_csv("vllm_memory.csv"):
        request = vllm_request(row)
        if isinstance(request, str):
            weights_metric.skip(request)
            tokens_metric.skip(request)
            continue
        result = run(weights_metric, request)
        if result is None:
            tokens_metric.skip("estimator refused the request")
            continue
        if row["weights_gib"]:
            weights_metric.add(result["per_device_weights_bytes"], float(row["weights_gib"]) * GIB)
        tokens = vllm_kv_tokens(row)
        if tokens is not None:
            tokens_metric.add(result["kv_cache_capacity_tokens"], tokens)
        else:
            tokens_metric.skip("no KV token count in the log")
    return [weights_metric, tokens_metric]
