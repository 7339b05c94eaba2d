"""Why an engine cannot run a setup: the weights format it loads, its backends, its KV
cache types (estimator.engines) and the offload it has a setting for. The one place that
decides: the launch commands refuse exactly these, and the configurator's form asks here.

Sources: vLLM's GGUF loader, features/quantization/gguf: "highly experimental", "only
supports loading single-file GGUF models", moved to the vllm-gguf-plugin. SGLang's
``--load-format`` lists gguf but its docs give no GGUF workflow (sgl-project/sglang#4894:
a .gguf fails to load). TensorRT-LLM, features/quantization: pre-quantized checkpoints
from NVIDIA Model Optimizer.
"""

from __future__ import annotations

from estimator.engines import engine_capability, llama_family, loads_hf, quant_backends
from estimator.launch.config import MLX_QUANTS, LaunchConfig
from estimator.launch.messages import Message, _

# The GGUF file type of about the same bytes per weight (catalog/data/quant_formats.csv).
SIMILAR_GGUF = {
    "fp32": "F32",
    "bf16": "BF16",
    "fp16": "F16",
    "fp8": "Q8_0",
    "w8a8": "Q8_0",
    "awq-int4": "Q4_K_M",
    "gptq-int4": "Q4_K_M",
    "nvfp4": "Q4_K_M",
    "mxfp4": "MXFP4_MOE",
}


def _label(engine: str) -> str:
    return engine_capability(engine).label


def _gguf_only(engine: str, weights_format: str, quant: str) -> Message | None:
    if weights_format == "gguf":
        return None
    if weights_format == "hf" and quant in SIMILAR_GGUF:
        return _(
            "%(engine)s loads GGUF files, not Hugging Face %(quant)s checkpoints; choose the "
            "GGUF quant of similar size, %(gguf)s.",
            engine=_label(engine),
            quant=quant,
            gguf=SIMILAR_GGUF[quant],
        )
    return _(
        "%(engine)s loads GGUF files, not %(quant)s checkpoints; choose a GGUF quant.",
        engine=_label(engine),
        quant=quant,
    )


def _hf_only(engine: str, weights_format: str, quant: str) -> Message | None:
    if weights_format == "hf":
        return None
    if engine == "vllm" and weights_format == "gguf":
        return _(
            "vLLM's GGUF loader is experimental, loads single-file GGUFs only and now needs "
            "the vllm-gguf-plugin; choose an HF format such as awq-int4 for vLLM."
        )
    if engine == "sglang" and weights_format == "gguf":
        return _(
            "SGLang documents no GGUF serving (its gguf load format is untested for most "
            "models); choose an HF format such as awq-int4 for SGLang."
        )
    return _(
        "%(engine)s loads Hugging Face checkpoints, not %(quant)s files; choose an HF "
        "format such as awq-int4.",
        engine=_label(engine),
        quant=quant,
    )


def _hf_format(engine: str, weights_format: str, quant: str) -> Message | None:
    reason = _hf_only(engine, weights_format, quant)
    if reason or loads_hf(engine, quant):
        return reason
    # Of the engines that load HF checkpoints, only TensorRT-LLM lists its formats.
    return _(
        "TensorRT-LLM's quantization recipes cover FP8, NVFP4, AWQ and GPTQ, and this page "
        "gives it 16-bit or those; choose bf16, fp8 or awq-int4 instead of %(quant)s.",
        quant=quant,
    )


def _mlx_format(engine: str, weights_format: str, quant: str) -> Message | None:
    if weights_format == "mlx" or (weights_format == "hf" and loads_hf(engine, quant)):
        return None
    return _(
        "MLX loads MLX-format safetensors (bf16/fp16 checkpoints or mlx-community quants), "
        "not %(quant)s; choose bf16 or an MLX quant.",
        quant=quant,
    )


# The engine's own weights format (EngineCapability.weight_formats[0]) -> its rule.
FORMAT_RULES = {"gguf": _gguf_only, "hf": _hf_format, "mlx": _mlx_format}


def _backend_refusal(engine: str, quant: str, backend: str) -> Message | None:
    allowed = engine_capability(engine).launch_backends
    if backend not in allowed:
        return _(
            "%(engine)s has no %(backend)s backend; it runs on %(backends)s.",
            engine=_label(engine),
            backend=backend,
            backends=", ".join(allowed),
        )
    if quant == "nvfp4" and backend != "cuda":
        return _("NVFP4 weights need NVIDIA GPUs (cuda), not %(backend)s.", backend=backend)
    runs_on = quant_backends(quant)
    if runs_on is not None and backend not in runs_on:
        return _(
            "%(quant)s weights need %(backends)s hardware, not %(backend)s.",
            quant=quant.upper(),
            backends=", ".join(runs_on),
            backend=backend,
        )
    return None


def _kv_refusal(engine: str, quant: str, kv: str) -> Message | None:
    allowed = engine_capability(engine).kv_cache_types
    # vLLM and SGLang keep the cache in the model dtype ("auto"): f32 only for fp32 weights.
    if kv == "f32" and kv in allowed and not llama_family(engine) and quant != "fp32":
        return _("%(engine)s keeps an f32 KV cache only for fp32 weights.", engine=_label(engine))
    if kv in allowed:
        return None
    return _(
        "%(engine)s has no %(kv)s KV cache; it offers %(kvs)s.",
        engine=_label(engine),
        kv=kv,
        kvs=", ".join(k for k in allowed if k != "f32"),
    )


def refusal(
    *, engine: str, weights_format: str, quant: str, backend: str, kv: str
) -> Message | None:
    """Why `engine` cannot load `quant` weights on `backend` with a `kv` cache, or None.
    An MLX quant ("mlx-4bit") is an MLX checkpoint whatever format the caller names."""
    if quant in MLX_QUANTS:
        weights_format = "mlx"
    rule = FORMAT_RULES[engine_capability(engine).weight_formats[0]]
    return (
        rule(engine, weights_format, quant)
        or _backend_refusal(engine, quant, backend)
        or _kv_refusal(engine, quant, kv)
    )


def setup_refusal(engine: str, config: LaunchConfig) -> Message | None:
    """Offload the engine has no setting for: Ollama keeps no MoE experts apart, vLLM and
    SGLang no experts of the first layers, TensorRT-LLM no weights in host memory."""
    if engine == "ollama" and (config.moe_experts or config.moe_layers):
        return _("Ollama has no setting that keeps only the MoE experts in host memory.")
    if engine in ("vllm", "sglang") and config.moe_layers:
        return _(
            "%(engine)s has no setting that keeps the experts of the first layers in "
            "host memory (llama.cpp --n-cpu-moe).",
            engine=_label(engine),
        )
    if engine == "tensorrt-llm" and config.offloaded_bytes:
        return _("trtllm-serve documents no weight offload to host memory.")
    return None
