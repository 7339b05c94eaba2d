"""What a launch command is built from (LaunchConfig, read off an estimator request and
its result) and what it is (LaunchCommand: the command line, or why the engine cannot)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from estimator.api.schema import Request, Result
from estimator.launch.messages import Message

# MLX checkpoints (mlx-community naming: <model>-4bit); the estimator has no MLX format.
MLX_QUANTS = ("mlx-3bit", "mlx-4bit", "mlx-6bit", "mlx-8bit")
HF_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
TORCH_DTYPES = {torch: name for name, torch in HF_DTYPES.items()}


@dataclass(frozen=True)
class LaunchConfig:
    """The sized setup, as every engine's command needs it."""

    hf_repo: str  # the original checkpoint, e.g. "zai-org/GLM-4.5-Air"
    gguf_repo: str  # a repository with GGUF files for this quant, "" when unknown
    weights_repo: str  # the catalog's repository for this exact HF/MLX format, "" if unknown
    weights_format: str  # "gguf" | "hf" | "mlx"
    quant: str  # GGUF file type ("Q4_K_M"), HF format ("awq-int4") or MLX quant
    native_dtype: str  # the original checkpoint's format: "bf16", "fp8", "mxfp4", "" unknown
    context_tokens: int
    gpus: int
    tensor_parallel: int  # devices vLLM-like engines split over (1 = not sized with TP)
    sequences: int
    kv: str
    backend: str  # cuda, rocm, metal, vulkan, sycl, cann, musa, tpu, hpu, xpu, cpu
    gpu_memory_utilization: float | None  # the request's value; None = each engine's default
    n_layers: int
    offloaded_layers: int
    offloaded_bytes: int  # all devices together
    moe_experts: bool  # every routed expert in host memory
    moe_layers: int = 0  # the routed experts of layers 0 .. N-1 in host memory (0: none)
    # the serving engines' batch cap (--max-num-seqs ...): the page's sequences, or, when
    # the page sizes fewer, the serving point's users (the most that each decode at its
    # per-user speed with a first token in time); 0: the page's sequences
    server_sequences: int = 0
    # A setup within the engine's default margin (estimator.memory.start_settings):
    # llama.cpp `--fit off`; Apple's raised wired limit in MB (0: unchanged).
    fit_off: bool = False
    wired_limit_mb: int = 0


@dataclass(frozen=True)
class LaunchCommand:
    """One engine's command for the setup, or the reason it cannot run it."""

    engine: str
    text: str | None  # None exactly when refused
    refused: Message | None
    notes: tuple[Message, ...] = ()


def native_dtype(hf_config: Mapping[str, Any]) -> str:
    """The checkpoint's own format: its quantization_config.quant_method when that is fp8
    or mxfp4 (DeepSeek-V3, gpt-oss), else its torch_dtype; "" when neither says."""
    quantization = hf_config.get("quantization_config")
    method = quantization.get("quant_method") if isinstance(quantization, Mapping) else None
    if method in ("fp8", "mxfp4"):
        return str(method)
    dtype = hf_config.get("torch_dtype") or hf_config.get("dtype")
    return TORCH_DTYPES.get(dtype, "") if isinstance(dtype, str) else ""


def launch_config(
    request: Request,
    result: Result,
    *,
    hf_repo: str,
    gguf_repo: str,
    weights_repo: str,
    n_layers: int,
    offloaded_layers: int,
) -> LaunchConfig:
    """The command inputs from an estimator request and its result; `offloaded_layers` of
    the model's `n_layers` sit in host memory as the estimator placed them
    (estimator.api.run.offloaded_layer_count). The servers' batch cap is the larger of the
    request's sequences and the result's serving point users. A setup within the engine's
    default margin carries its start settings (result.fit): the memory share it needs,
    llama.cpp's `--fit off`, Apple's wired limit."""
    workload, offload = request.workload, request.workload.offload
    serving_users = int((result.serving or {}).get("users") or 0)
    return LaunchConfig(
        hf_repo=hf_repo,
        gguf_repo=gguf_repo,
        weights_repo=weights_repo,
        weights_format="gguf" if request.weights.format == "gguf" else "hf",
        quant=request.weights.name,
        native_dtype=native_dtype(request.model.hf_config),
        context_tokens=workload.context_tokens,
        gpus=request.device.count,
        tensor_parallel=workload.tensor_parallel,
        sequences=workload.concurrent_sequences,
        kv=workload.kv_cache_dtype,
        backend=request.engine.backend,
        gpu_memory_utilization=(
            result.fit.start_memory_share or request.engine.gpu_memory_utilization
        ),
        n_layers=n_layers,
        offloaded_layers=offloaded_layers,
        offloaded_bytes=result.offloaded_bytes,
        moe_experts=offload.moe_experts,
        moe_layers=offload.moe_layers or 0,
        server_sequences=max(workload.concurrent_sequences, serving_users),
        fit_off="--fit" in result.fit.start_flags,
        wired_limit_mb=result.fit.wired_limit_mb or 0,
    )
