"""Request validation: a JSON object in, a typed `Request` out, or `RequestError(field, ...)`.

The checks are strict on purpose: an unknown key is more often a typo than an extension,
and a silently ignored "context" (instead of "context_tokens") would size the wrong thing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from estimator.api.schema import (
    BACKENDS,
    DEVICE_CLASSES,
    ENGINES,
    FINETUNE_METHODS,
    KV_DTYPES,
    LLAMA_BACKENDS,
    LLAMA_FAMILY,
    LLAMA_KV_TYPES,
    MEMORY_KINDS,
    MLA_LAYOUTS,
    SERVER_BACKENDS,
    VENDORS,
    Device,
    Engine,
    FinetuneSpec,
    ModelInput,
    Offload,
    Pricing,
    Request,
    ServingTargets,
    WeightsSpec,
    Workload,
)
from estimator.weights import EXTRA_GGUF_FILE_TYPES, GGUF_FILE_TYPES, HF_FORMATS

HF_DTYPE_ALIASES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "f16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "f32": "fp32",
    "awq": "awq-int4",
    "gptq": "gptq-int4",
    "w4a16": "gptq-int4",
}
GGUF_QUANTS = GGUF_FILE_TYPES + EXTRA_GGUF_FILE_TYPES
DEFAULT_BACKEND_BY_VENDOR = {
    "nvidia": "cuda",
    "amd": "rocm",
    "apple": "metal",
    "intel": "sycl",
    "cpu": "cpu",
    "other": "vulkan",
}


class RequestError(ValueError):
    """A bad request; `field` is the dotted path of the offending value."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _section(
    data: Mapping[str, Any], key: str, allowed: set[str], required: bool = False
) -> dict[str, Any]:
    if key not in data or data[key] is None:
        if required:
            raise RequestError(key, "is required")
        return {}
    value = data[key]
    if not isinstance(value, Mapping):
        raise RequestError(key, "must be a JSON object")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise RequestError(
            f"{key}.{unknown[0]}", f"unknown field; allowed: {', '.join(sorted(allowed))}"
        )
    return dict(value)


def _number(
    section: Mapping[str, Any],
    path: str,
    *,
    default: float | None = None,
    required: bool = False,
    minimum: float = 0.0,
    exclusive: bool = True,
    maximum: float | None = None,
) -> float | None:
    key = path.rsplit(".", 1)[-1]
    if key not in section or section[key] is None:
        if required:
            raise RequestError(path, "is required")
        return default
    value = section[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestError(path, f"must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise RequestError(path, "must be a finite number (NaN and Infinity are rejected)")
    if value < minimum or (exclusive and value == minimum):
        relation = "greater than" if exclusive else "at least"
        raise RequestError(path, f"must be {relation} {minimum:g}, got {value:g}")
    if maximum is not None and value > maximum:
        raise RequestError(path, f"must be at most {maximum:g}, got {value:g}")
    return float(value)


def _integer(
    section: Mapping[str, Any],
    path: str,
    *,
    default: int | None = None,
    required: bool = False,
    minimum: int = 1,
) -> int | None:
    key = path.rsplit(".", 1)[-1]
    if key not in section or section[key] is None:
        if required:
            raise RequestError(path, "is required")
        return default
    value = section[key]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and not math.isfinite(value):
            raise RequestError(path, "must be a finite integer (NaN and Infinity are rejected)")
        raise RequestError(path, f"must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise RequestError(path, f"must be at least {minimum}, got {value}")
    return value


def _choice(
    section: Mapping[str, Any],
    path: str,
    choices: tuple[str, ...],
    default: str | None = None,
    required: bool = False,
) -> str | None:
    key = path.rsplit(".", 1)[-1]
    if key not in section or section[key] is None:
        if required:
            raise RequestError(path, "is required")
        return default
    value = section[key]
    if not isinstance(value, str):
        raise RequestError(path, f"must be a string, got {type(value).__name__}")
    normalised = value.strip().lower()
    lowered = {c.lower(): c for c in choices}
    if normalised not in lowered:
        raise RequestError(path, f"unknown value {value!r}; expected one of {', '.join(choices)}")
    return lowered[normalised]


def _boolean(section: Mapping[str, Any], path: str, default: bool) -> bool:
    key = path.rsplit(".", 1)[-1]
    if key not in section or section[key] is None:
        return default
    value = section[key]
    if not isinstance(value, bool):
        raise RequestError(path, f"must be true or false, got {type(value).__name__}")
    return value


def _string(section: Mapping[str, Any], path: str) -> str | None:
    key = path.rsplit(".", 1)[-1]
    value = section.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise RequestError(path, "must be a non-empty string")
    return value.strip()


def _check_finite_tree(value: Any, path: str) -> None:
    """Reject NaN/Infinity anywhere in config.json: Python's json accepts them, HF's does not."""
    if isinstance(value, float) and not math.isfinite(value):
        raise RequestError(path, "must be a finite number (NaN and Infinity are rejected)")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_finite_tree(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_finite_tree(item, f"{path}[{index}]")


def model_input(config: Any, *, max_context_tokens: int | None = None) -> ModelInput:
    """A config.json object as the request's model: checked (a JSON object, finite numbers)
    and kept as canonical JSON text, with the context a model card states for RoPE scaling
    when config.json allows less (ModelInput.max_context_tokens). Raises RequestError
    naming model.hf_config."""
    if config is None:
        raise RequestError("model.hf_config", "is required (the model's config.json object)")
    if not isinstance(config, Mapping):
        raise RequestError("model.hf_config", "must be a JSON object (config.json)")
    _check_finite_tree(config, "model.hf_config")
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return ModelInput(text, max_context_tokens)


def _parse_model(data: Mapping[str, Any]) -> ModelInput:
    section = _section(data, "model", {"hf_config", "name", "max_context_tokens"}, required=True)
    stated = _integer(section, "model.max_context_tokens", default=None)
    return model_input(section.get("hf_config"), max_context_tokens=stated)


def _check_gguf_quant(quant: str, given: str) -> None:
    """`quant` (upper case) must be a GGUF file type; `given` is how the request wrote it."""
    if quant not in GGUF_QUANTS:
        raise RequestError(
            "weights.quant",
            f"unknown GGUF file type {given!r}; expected one of {', '.join(GGUF_QUANTS)}",
        )


def _parse_weights(data: Mapping[str, Any], engine: Engine) -> WeightsSpec:
    allowed = {"format", "quant", "dtype", "file_bytes", "imatrix", "group_size"}
    section = _section(data, "weights", allowed)
    if not section:
        if engine.name in LLAMA_FAMILY and engine.name != "mlx":
            return WeightsSpec("gguf", quant="Q4_K_M")
        return WeightsSpec("hf", dtype="bf16")
    fmt = _choice(section, "weights.format", ("gguf", "hf"), required=True)
    assert fmt is not None
    file_bytes = _integer(section, "weights.file_bytes", minimum=1)
    imatrix = _boolean(section, "weights.imatrix", True)
    group_size = _integer(section, "weights.group_size", default=128)
    assert group_size is not None
    if fmt == "gguf":
        quant = _string(section, "weights.quant")
        if quant is None and file_bytes is None:
            raise RequestError("weights.quant", "is required for GGUF weights (or give file_bytes)")
        if "dtype" in section:
            raise RequestError("weights.dtype", "applies to hf weights; use quant for GGUF")
        if quant is not None:
            _check_gguf_quant(quant.upper(), quant)
        return WeightsSpec(
            "gguf", quant=quant.upper() if quant else None, file_bytes=file_bytes, imatrix=imatrix
        )
    if "quant" in section:
        raise RequestError("weights.quant", "applies to gguf weights; use dtype for hf")
    raw = section.get("dtype")
    if isinstance(raw, str):
        section["dtype"] = HF_DTYPE_ALIASES.get(raw.strip().lower(), raw)
    dtype = _choice(section, "weights.dtype", HF_FORMATS, default="bf16")
    return WeightsSpec("hf", dtype=dtype, file_bytes=file_bytes, group_size=group_size)


def _parse_device(data: Mapping[str, Any]) -> Device:
    allowed = {
        "memory_gb",
        "bandwidth_gbps",
        "fp16_tflops",
        "fp8_tflops",
        "fp4_tflops",
        "int8_tops",
        "count",
        "memory_kind",
        "vendor",
        "interconnect_gbps",
        "host_memory_gb",
        "host_bandwidth_gbps",
        "name",
        "device_class",
        "architecture",
    }
    s = _section(data, "device", allowed, required=True)
    vendor = _choice(s, "device.vendor", VENDORS, default="nvidia")
    default_kind = "unified" if vendor == "apple" else "discrete"
    return Device(
        memory_gb=_number(s, "device.memory_gb", required=True) or 0.0,
        bandwidth_gbps=_number(s, "device.bandwidth_gbps", required=True) or 0.0,
        fp16_tflops=_number(s, "device.fp16_tflops"),
        fp8_tflops=_number(s, "device.fp8_tflops"),
        int8_tops=_number(s, "device.int8_tops"),
        fp4_tflops=_number(s, "device.fp4_tflops"),
        count=_integer(s, "device.count", default=1) or 1,
        memory_kind=_choice(s, "device.memory_kind", MEMORY_KINDS, default=default_kind)
        or default_kind,
        vendor=vendor or "nvidia",
        interconnect_gbps=_number(s, "device.interconnect_gbps"),
        host_memory_gb=_number(s, "device.host_memory_gb"),
        host_bandwidth_gbps=_number(s, "device.host_bandwidth_gbps"),
        name=_string(s, "device.name"),
        device_class=_choice(s, "device.device_class", DEVICE_CLASSES),
        architecture=_string(s, "device.architecture"),
    )


def default_backend(engine: str, vendor: str) -> str:
    """The backend an engine runs on when the request names none: Metal for MLX, the
    vendor's ggml backend for the llama.cpp family, ROCm on AMD else CUDA for the others."""
    if engine == "mlx":
        return "metal"
    if engine not in LLAMA_FAMILY:
        return "rocm" if vendor == "amd" else "cuda"
    return DEFAULT_BACKEND_BY_VENDOR[vendor]


def _check_backend(name: str, backend: str, *, explicit: bool) -> None:
    """Engines run on their own backends only: MLX on Metal, TensorRT-LLM on CUDA, the
    llama.cpp family on ggml's backends, vLLM/SGLang on theirs (in-tree or plugin)."""
    if not explicit:
        return
    allowed = {
        "mlx": ("metal", "cuda", "cpu"),
        "tensorrt-llm": ("cuda",),
    }.get(name, LLAMA_BACKENDS if name in LLAMA_FAMILY else SERVER_BACKENDS)
    if backend not in allowed:
        raise RequestError("engine.backend", f"{name} runs on {', '.join(allowed)}, not {backend}")


def _parse_engine(data: Mapping[str, Any], device: Device) -> Engine:
    allowed = {
        "name",
        "backend",
        "n_ubatch",
        "n_batch",
        "flash_attention",
        "type_k",
        "type_v",
        "gpu_memory_utilization",
        "max_num_batched_tokens",
        "max_num_seqs",
        "block_size",
        "cuda_graphs",
        "mla_layout",
        "swa_full",
    }
    s = _section(data, "engine", allowed)
    name = _choice(s, "engine.name", ENGINES, default="llama.cpp") or "llama.cpp"
    default = default_backend(name, device.vendor)
    backend = _choice(s, "engine.backend", BACKENDS, default=default) or default
    _check_backend(name, backend, explicit="backend" in s)
    return Engine(
        name=name,
        backend=backend,
        n_ubatch=_integer(s, "engine.n_ubatch", default=512) or 512,
        n_batch=_integer(s, "engine.n_batch", default=2048) or 2048,
        flash_attention=_boolean(s, "engine.flash_attention", True),
        type_k=_choice(s, "engine.type_k", LLAMA_KV_TYPES),
        type_v=_choice(s, "engine.type_v", LLAMA_KV_TYPES),
        gpu_memory_utilization=_number(s, "engine.gpu_memory_utilization", maximum=1.0),
        max_num_batched_tokens=_integer(s, "engine.max_num_batched_tokens"),
        max_num_seqs=_integer(s, "engine.max_num_seqs"),
        block_size=_integer(s, "engine.block_size", default=16) or 16,
        cuda_graphs=_boolean(s, "engine.cuda_graphs", True),
        mla_layout=_choice(s, "engine.mla_layout", MLA_LAYOUTS),
        swa_full=_boolean(s, "engine.swa_full", False),
    )


def _parse_offload(workload: Mapping[str, Any]) -> Offload:
    value = workload.get("offload")
    if value is None:
        return Offload()
    if not isinstance(value, Mapping):
        raise RequestError("workload.offload", "must be a JSON object")
    allowed = {"fraction", "layers", "moe_experts", "moe_layers"}
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise RequestError(
            f"workload.offload.{unknown[0]}",
            "unknown field; allowed: fraction, layers, moe_experts, moe_layers",
        )
    fraction = (
        _number(value, "workload.offload.fraction", default=0.0, exclusive=False, maximum=1.0)
        or 0.0
    )
    layers = _integer(value, "workload.offload.layers", minimum=0)
    if layers is not None and "fraction" in value and fraction > 0:
        raise RequestError("workload.offload", "give fraction or layers, not both")
    return Offload(
        fraction=fraction,
        layers=layers,
        moe_experts=_boolean(value, "workload.offload.moe_experts", False),
        moe_layers=_integer(value, "workload.offload.moe_layers", minimum=0),
    )


def _check_token_budget(prompt: int, output: int, context: int, field: str) -> None:
    """The prompt and the output must fit in the context; `field` takes the blame."""
    if prompt + output > context:
        raise RequestError(
            field,
            f"prompt_tokens + output_tokens ({prompt + output}) exceeds context_tokens ({context})",
        )


def _parse_workload(data: Mapping[str, Any]) -> Workload:
    allowed = {
        "context_tokens",
        "concurrent_sequences",
        "prompt_tokens",
        "output_tokens",
        "kv_cache_dtype",
        "tensor_parallel",
        "offload",
    }
    s = _section(data, "workload", allowed)
    context = _integer(s, "workload.context_tokens", default=8192) or 8192
    # Defaults shrink with a short context so a bare context_tokens is always valid.
    prompt = _integer(s, "workload.prompt_tokens", default=min(512, context // 2), minimum=0)
    assert prompt is not None
    output = (
        _integer(s, "workload.output_tokens", default=max(1, min(256, context - prompt)), minimum=1)
        or 1
    )
    field = "workload.prompt_tokens" if "prompt_tokens" in s else "workload.output_tokens"
    _check_token_budget(prompt, output, context, field)
    return Workload(
        context_tokens=context,
        concurrent_sequences=_integer(s, "workload.concurrent_sequences", default=1) or 1,
        prompt_tokens=prompt,
        output_tokens=output,
        kv_cache_dtype=_choice(s, "workload.kv_cache_dtype", KV_DTYPES, default="f16") or "f16",
        tensor_parallel=_integer(s, "workload.tensor_parallel", default=1) or 1,
        offload=_parse_offload(s),
    )


def _parse_pricing(data: Mapping[str, Any]) -> Pricing | None:
    allowed = {
        "usd_per_hour",
        "purchase_usd",
        "power_w",
        "usd_per_kwh",
        "amortisation_years",
        "utilisation",
        "hours_per_day",
        "pue",
    }
    s = _section(data, "pricing", allowed)
    if not s:
        return None
    pricing = Pricing(
        usd_per_hour=_number(s, "pricing.usd_per_hour"),
        purchase_usd=_number(s, "pricing.purchase_usd"),
        power_w=_number(s, "pricing.power_w", exclusive=False),
        usd_per_kwh=_number(s, "pricing.usd_per_kwh", default=0.15, exclusive=False) or 0.0,
        amortisation_years=_number(s, "pricing.amortisation_years", default=3.0) or 3.0,
        utilisation=_number(s, "pricing.utilisation", default=1.0, maximum=1.0) or 1.0,
        hours_per_day=_number(s, "pricing.hours_per_day", default=24.0, maximum=24.0) or 24.0,
        pue=_number(s, "pricing.pue", default=1.0) or 1.0,
    )
    if pricing.usd_per_hour is None and pricing.purchase_usd is None:
        raise RequestError("pricing.usd_per_hour", "give usd_per_hour and/or purchase_usd")
    return pricing


def _parse_finetune(data: Mapping[str, Any]) -> FinetuneSpec | None:
    allowed = {
        "method",
        "lora_rank",
        "batch_size",
        "sequence_tokens",
        "gradient_checkpointing",
        "optimizer",
    }
    s = _section(data, "finetune", allowed)
    if not s and "finetune" not in data:
        return None
    return FinetuneSpec(
        method=_choice(s, "finetune.method", FINETUNE_METHODS, default="lora") or "lora",
        lora_rank=_integer(s, "finetune.lora_rank", default=16) or 16,
        batch_size=_integer(s, "finetune.batch_size", default=1) or 1,
        sequence_tokens=_integer(s, "finetune.sequence_tokens", default=2048) or 2048,
        gradient_checkpointing=_boolean(s, "finetune.gradient_checkpointing", True),
        optimizer=_choice(s, "finetune.optimizer", ("adamw", "adamw8bit"), default="adamw")
        or "adamw",
    )


def _parse_serving(data: Mapping[str, Any]) -> ServingTargets | None:
    """The serving point's service level; None (the defaults) when the request has none."""
    s = _section(data, "serving", {"tokens_per_s_per_user", "ttft_s", "cached_prompt_share"})
    if not s and "serving" not in data:
        return None
    defaults = ServingTargets()
    return ServingTargets(
        tokens_per_s_per_user=_number(
            s,
            "serving.tokens_per_s_per_user",
            default=defaults.tokens_per_s_per_user,
            maximum=100_000.0,
        )
        or defaults.tokens_per_s_per_user,
        ttft_s=_number(s, "serving.ttft_s", default=defaults.ttft_s, maximum=86_400.0)
        or defaults.ttft_s,
        cached_prompt_share=_number(
            s, "serving.cached_prompt_share", default=0.0, exclusive=False, maximum=0.95
        )
        or 0.0,
    )


def _check_kv_dtype(engine: Engine, workload: Workload) -> None:
    """llama.cpp has no fp8 cache; vLLM-like engines have no ggml block types."""
    dtype = workload.kv_cache_dtype
    if engine.name in LLAMA_FAMILY and dtype == "fp8":
        raise RequestError(
            "workload.kv_cache_dtype",
            f"{engine.name} has no fp8 KV cache; use q8_0 (needs flash attention)",
        )
    if engine.name in LLAMA_FAMILY and dtype == "f32":
        raise RequestError(
            "workload.kv_cache_dtype", f"use engine.type_k/type_v for an f32 cache in {engine.name}"
        )
    if engine.name not in LLAMA_FAMILY and dtype in ("q8_0", "q4_0"):
        raise RequestError(
            "workload.kv_cache_dtype", f"{engine.name} has no {dtype} KV cache; use fp8"
        )
    if engine.name not in LLAMA_FAMILY and (engine.type_k or engine.type_v):
        raise RequestError(
            "engine.type_k", "type_k/type_v are llama.cpp settings; use workload.kv_cache_dtype"
        )


def _check_parallel(workload: Workload, device: Device) -> None:
    if workload.tensor_parallel > device.count:
        raise RequestError(
            "workload.tensor_parallel",
            f"{workload.tensor_parallel} exceeds device.count ({device.count})",
        )


TOP_LEVEL = {
    "model",
    "weights",
    "device",
    "engine",
    "workload",
    "pricing",
    "finetune",
    "recommend",
    "id",
    "serving",
}


def parse_request(data: Any) -> Request:
    """Validate one request object and fill in the documented defaults.

    Raises `RequestError` naming the first bad field (dotted path). Model-dependent checks
    (context above the model's maximum, a config without layers) happen in `run_estimate`,
    which raises the same error type.
    """
    if not isinstance(data, Mapping):
        raise RequestError("request", "must be a JSON object")
    unknown = sorted(set(data) - TOP_LEVEL)
    if unknown:
        raise RequestError(unknown[0], f"unknown field; allowed: {', '.join(sorted(TOP_LEVEL))}")
    model = _parse_model(data)
    device = _parse_device(data)
    engine = _parse_engine(data, device)
    workload = _parse_workload(data)
    _check_kv_dtype(engine, workload)
    _check_parallel(workload, device)
    request_id = data.get("id")
    if request_id is not None and not isinstance(request_id, str | int):
        raise RequestError("id", "must be a string or an integer")
    return Request(
        model=model,
        weights=_parse_weights(data, engine),
        device=device,
        engine=engine,
        workload=workload,
        pricing=_parse_pricing(data),
        finetune=_parse_finetune(data),
        recommend=_boolean(data, "recommend", False),
        id=None if request_id is None else str(request_id),
        serving_targets=_parse_serving(data),
    )


def _check_weights(weights: WeightsSpec) -> None:
    """A typed request's weights name a format the estimator sizes."""
    if weights.format == "gguf":
        if weights.quant is not None:
            _check_gguf_quant(weights.quant, weights.quant)
    else:
        _choice(vars(weights), "weights.dtype", HF_FORMATS, required=True)


def _check_ranges(request: Request) -> None:
    """The bounds parse_request puts on the numbers a caller sets in code (device figures
    from a catalog, workload from a form); the same checks, messages and fields."""
    device, workload = vars(request.device), vars(request.workload)
    for name in ("memory_gb", "bandwidth_gbps"):
        _number(device, f"device.{name}", required=True)
    optional = (
        "fp16_tflops",
        "fp8_tflops",
        "fp4_tflops",
        "int8_tops",
        "interconnect_gbps",
        "host_memory_gb",
    )
    for name in (*optional, "host_bandwidth_gbps"):
        _number(device, f"device.{name}")
    _integer(device, "device.count", required=True)
    for name in ("context_tokens", "concurrent_sequences", "output_tokens", "tensor_parallel"):
        _integer(workload, f"workload.{name}", required=True)
    _integer(workload, "workload.prompt_tokens", required=True, minimum=0)
    _choice(workload, "workload.kv_cache_dtype", KV_DTYPES, required=True)
    _choice(vars(request.engine), "engine.name", ENGINES, required=True)
    offload = vars(request.workload.offload)
    _number(offload, "workload.offload.fraction", exclusive=False, maximum=1.0)
    _integer(offload, "workload.offload.layers", minimum=0)


def check_request(request: Request) -> Request:
    """The checks parse_request makes across fields, for a Request built in code: numbers in
    range, known weights, the engine on its backend, a KV cache type the engine has, prompt
    and output within the context, tensor parallelism within the devices. Raises the same
    RequestError (field, message) as parse_request; returns the request unchanged."""
    _check_ranges(request)
    _check_weights(request.weights)
    _check_backend(request.engine.name, request.engine.backend, explicit=True)
    workload = request.workload
    _check_token_budget(
        workload.prompt_tokens,
        workload.output_tokens,
        workload.context_tokens,
        "workload.prompt_tokens",
    )
    _check_kv_dtype(request.engine, workload)
    _check_parallel(workload, request.device)
    return request
