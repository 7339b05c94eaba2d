"""Request validation: a JSON object in, a typed `Request` out, or `RequestError(field, ...)`.

The checks are strict on purpose: an unknown key is more often a typo than an extension,
and a silently ignored "context" (instead of "context_tokens") would size the wrong thing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from estimator.api.fields import (
    RequestError,
    read_boolean,
    read_choice,
    read_integer,
    read_number,
    read_section,
    read_string,
)
from estimator.api.schema import (
    DEVICE_CLASSES,
    FINETUNE_METHODS,
    MEMORY_KINDS,
    MLA_LAYOUTS,
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
from estimator.engines import (
    BACKENDS,
    ENGINES,
    KV_DTYPES,
    LLAMA_KV_TYPES,
    engine_capability,
    llama_family,
    runs_gguf,
)
from estimator.weights import EXTRA_GGUF_FILE_TYPES, GGUF_FILE_TYPES, HF_FORMATS, REPACK_BASE

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
    section = read_section(
        data, "model", {"hf_config", "name", "max_context_tokens"}, required=True
    )
    stated = read_integer(section, "model.max_context_tokens", default=None)
    return model_input(section.get("hf_config"), max_context_tokens=stated)


def _check_gguf_quant(quant: str, given: str) -> None:
    """`quant` (upper case) must be a GGUF file type (or an ARM repack of Q4_0, REPACK_BASE,
    sized as Q4_0); `given` is how the request wrote it."""
    if quant not in GGUF_QUANTS and quant not in REPACK_BASE:
        raise RequestError(
            "weights.quant",
            f"unknown GGUF file type {given!r}; expected one of {', '.join(GGUF_QUANTS)}",
        )


def _parse_weights(data: Mapping[str, Any], engine: Engine) -> WeightsSpec:
    allowed = {"format", "quant", "dtype", "file_bytes", "imatrix", "group_size"}
    section = read_section(data, "weights", allowed)
    if not section:
        if runs_gguf(engine.name):
            return WeightsSpec("gguf", quant="Q4_K_M")
        return WeightsSpec("hf", dtype="bf16")
    fmt = read_choice(section, "weights.format", ("gguf", "hf"), required=True)
    assert fmt is not None
    file_bytes = read_integer(section, "weights.file_bytes", minimum=1)
    imatrix = read_boolean(section, "weights.imatrix", True)
    group_size = read_integer(section, "weights.group_size", default=128)
    assert group_size is not None
    if fmt == "gguf":
        quant = read_string(section, "weights.quant")
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
    dtype = read_choice(section, "weights.dtype", HF_FORMATS, default="bf16")
    return WeightsSpec("hf", dtype=dtype, file_bytes=file_bytes, group_size=group_size)


def _parse_device(data: Mapping[str, Any]) -> Device:
    allowed = {
        "memory_gb",
        "bandwidth_gbps",
        "fp16_tflops",
        "fp8_tflops",
        "fp4_tflops",
        "int8_tops",
        "tdp_w",
        "count",
        "memory_kind",
        "vendor",
        "interconnect_gbps",
        "host_memory_gb",
        "host_bandwidth_gbps",
        "name",
        "device_class",
        "architecture",
        "memory_type",
        "fp16_imputed",
        "fp16_imputed_from",
    }
    s = read_section(data, "device", allowed, required=True)
    vendor = read_choice(s, "device.vendor", VENDORS, default="nvidia")
    default_kind = "unified" if vendor == "apple" else "discrete"
    return Device(
        memory_gb=read_number(s, "device.memory_gb", required=True) or 0.0,
        bandwidth_gbps=read_number(s, "device.bandwidth_gbps", required=True) or 0.0,
        fp16_tflops=read_number(s, "device.fp16_tflops"),
        fp8_tflops=read_number(s, "device.fp8_tflops"),
        int8_tops=read_number(s, "device.int8_tops"),
        fp4_tflops=read_number(s, "device.fp4_tflops"),
        tdp_w=read_number(s, "device.tdp_w"),
        count=read_integer(s, "device.count", default=1) or 1,
        memory_kind=read_choice(s, "device.memory_kind", MEMORY_KINDS, default=default_kind)
        or default_kind,
        vendor=vendor or "nvidia",
        interconnect_gbps=read_number(s, "device.interconnect_gbps"),
        host_memory_gb=read_number(s, "device.host_memory_gb"),
        host_bandwidth_gbps=read_number(s, "device.host_bandwidth_gbps"),
        name=read_string(s, "device.name"),
        device_class=read_choice(s, "device.device_class", DEVICE_CLASSES),
        architecture=read_string(s, "device.architecture"),
        memory_type=read_string(s, "device.memory_type"),
        fp16_imputed=read_boolean(s, "device.fp16_imputed", False),
        fp16_imputed_from=read_string(s, "device.fp16_imputed_from"),
    )


def default_backend(engine: str, vendor: str) -> str:
    """The backend an engine runs on when the request names none: Metal for MLX, the
    vendor's ggml backend for the llama.cpp family, ROCm on AMD else CUDA for the others
    (estimator.engines: EngineCapability.backend_for)."""
    return engine_capability(engine).backend_for(vendor)


def _check_backend(name: str, backend: str, *, explicit: bool) -> None:
    """Engines run on their own backends only (EngineCapability.backends): MLX on Metal,
    CUDA and CPU, TensorRT-LLM on CUDA, llama.cpp and Ollama on ggml's backends,
    vLLM/SGLang on theirs (in-tree or plugin)."""
    if not explicit:
        return
    allowed = engine_capability(name).backends
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
    s = read_section(data, "engine", allowed)
    name = read_choice(s, "engine.name", ENGINES, default="llama.cpp") or "llama.cpp"
    default = default_backend(name, device.vendor)
    backend = read_choice(s, "engine.backend", BACKENDS, default=default) or default
    _check_backend(name, backend, explicit="backend" in s)
    return Engine(
        name=name,
        backend=backend,
        n_ubatch=read_integer(s, "engine.n_ubatch", default=512) or 512,
        n_batch=read_integer(s, "engine.n_batch", default=2048) or 2048,
        flash_attention=read_boolean(s, "engine.flash_attention", True),
        type_k=read_choice(s, "engine.type_k", LLAMA_KV_TYPES),
        type_v=read_choice(s, "engine.type_v", LLAMA_KV_TYPES),
        gpu_memory_utilization=read_number(s, "engine.gpu_memory_utilization", maximum=1.0),
        max_num_batched_tokens=read_integer(s, "engine.max_num_batched_tokens"),
        max_num_seqs=read_integer(s, "engine.max_num_seqs"),
        block_size=read_integer(s, "engine.block_size", default=16) or 16,
        cuda_graphs=read_boolean(s, "engine.cuda_graphs", True),
        mla_layout=read_choice(s, "engine.mla_layout", MLA_LAYOUTS),
        swa_full=read_boolean(s, "engine.swa_full", False),
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
        read_number(value, "workload.offload.fraction", default=0.0, exclusive=False, maximum=1.0)
        or 0.0
    )
    layers = read_integer(value, "workload.offload.layers", minimum=0)
    if layers is not None and "fraction" in value and fraction > 0:
        raise RequestError("workload.offload", "give fraction or layers, not both")
    return Offload(
        fraction=fraction,
        layers=layers,
        moe_experts=read_boolean(value, "workload.offload.moe_experts", False),
        moe_layers=read_integer(value, "workload.offload.moe_layers", minimum=0),
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
    s = read_section(data, "workload", allowed)
    context = read_integer(s, "workload.context_tokens", default=8192) or 8192
    # Defaults shrink with a short context so a bare context_tokens is always valid.
    prompt = read_integer(s, "workload.prompt_tokens", default=min(512, context // 2), minimum=0)
    assert prompt is not None
    output = (
        read_integer(
            s, "workload.output_tokens", default=max(1, min(256, context - prompt)), minimum=1
        )
        or 1
    )
    field = "workload.prompt_tokens" if "prompt_tokens" in s else "workload.output_tokens"
    _check_token_budget(prompt, output, context, field)
    return Workload(
        context_tokens=context,
        concurrent_sequences=read_integer(s, "workload.concurrent_sequences", default=1) or 1,
        prompt_tokens=prompt,
        output_tokens=output,
        kv_cache_dtype=read_choice(s, "workload.kv_cache_dtype", KV_DTYPES, default="f16") or "f16",
        tensor_parallel=read_integer(s, "workload.tensor_parallel", default=1) or 1,
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
    s = read_section(data, "pricing", allowed)
    if not s:
        return None
    pricing = Pricing(
        usd_per_hour=read_number(s, "pricing.usd_per_hour"),
        purchase_usd=read_number(s, "pricing.purchase_usd"),
        power_w=read_number(s, "pricing.power_w", exclusive=False),
        usd_per_kwh=read_number(s, "pricing.usd_per_kwh", default=0.15, exclusive=False) or 0.0,
        amortisation_years=read_number(s, "pricing.amortisation_years", default=3.0) or 3.0,
        utilisation=read_number(s, "pricing.utilisation", default=1.0, maximum=1.0) or 1.0,
        hours_per_day=read_number(s, "pricing.hours_per_day", default=24.0, maximum=24.0) or 24.0,
        pue=read_number(s, "pricing.pue", default=1.0) or 1.0,
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
    s = read_section(data, "finetune", allowed)
    if not s and "finetune" not in data:
        return None
    return FinetuneSpec(
        method=read_choice(s, "finetune.method", FINETUNE_METHODS, default="lora") or "lora",
        lora_rank=read_integer(s, "finetune.lora_rank", default=16) or 16,
        batch_size=read_integer(s, "finetune.batch_size", default=1) or 1,
        sequence_tokens=read_integer(s, "finetune.sequence_tokens", default=2048) or 2048,
        gradient_checkpointing=read_boolean(s, "finetune.gradient_checkpointing", True),
        optimizer=read_choice(s, "finetune.optimizer", ("adamw", "adamw8bit"), default="adamw")
        or "adamw",
    )


def _parse_serving(data: Mapping[str, Any]) -> ServingTargets | None:
    """The serving point's service level; None (the defaults) when the request has none."""
    s = read_section(data, "serving", {"tokens_per_s_per_user", "ttft_s", "cached_prompt_share"})
    if not s and "serving" not in data:
        return None
    defaults = ServingTargets()
    return ServingTargets(
        tokens_per_s_per_user=read_number(
            s,
            "serving.tokens_per_s_per_user",
            default=defaults.tokens_per_s_per_user,
            maximum=100_000.0,
        )
        or defaults.tokens_per_s_per_user,
        ttft_s=read_number(s, "serving.ttft_s", default=defaults.ttft_s, maximum=86_400.0)
        or defaults.ttft_s,
        cached_prompt_share=read_number(
            s, "serving.cached_prompt_share", default=0.0, exclusive=False, maximum=0.95
        )
        or 0.0,
    )


def _check_kv_dtype(engine: Engine, workload: Workload) -> None:
    """llama.cpp has no fp8 cache; vLLM-like engines have no ggml block types."""
    dtype = workload.kv_cache_dtype
    if llama_family(engine.name) and dtype == "fp8":
        raise RequestError(
            "workload.kv_cache_dtype",
            f"{engine.name} has no fp8 KV cache; use q8_0 (needs flash attention)",
        )
    if llama_family(engine.name) and dtype == "f32":
        raise RequestError(
            "workload.kv_cache_dtype", f"use engine.type_k/type_v for an f32 cache in {engine.name}"
        )
    if not llama_family(engine.name) and dtype in ("q8_0", "q4_0"):
        raise RequestError(
            "workload.kv_cache_dtype", f"{engine.name} has no {dtype} KV cache; use fp8"
        )
    if not llama_family(engine.name) and (engine.type_k or engine.type_v):
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
        recommend=read_boolean(data, "recommend", False),
        id=None if request_id is None else str(request_id),
        serving_targets=_parse_serving(data),
    )


def _check_weights(weights: WeightsSpec) -> None:
    """A typed request's weights name a format the estimator sizes."""
    if weights.format == "gguf":
        if weights.quant is not None:
            _check_gguf_quant(weights.quant, weights.quant)
    else:
        read_choice(vars(weights), "weights.dtype", HF_FORMATS, required=True)


def _check_ranges(request: Request) -> None:
    """The bounds parse_request puts on the numbers a caller sets in code (device figures
    from a catalog, workload from a form); the same checks, messages and fields."""
    device, workload = vars(request.device), vars(request.workload)
    for name in ("memory_gb", "bandwidth_gbps"):
        read_number(device, f"device.{name}", required=True)
    optional = (
        "fp16_tflops",
        "fp8_tflops",
        "fp4_tflops",
        "int8_tops",
        "tdp_w",
        "interconnect_gbps",
        "host_memory_gb",
    )
    for name in (*optional, "host_bandwidth_gbps"):
        read_number(device, f"device.{name}")
    read_integer(device, "device.count", required=True)
    for name in ("context_tokens", "concurrent_sequences", "output_tokens", "tensor_parallel"):
        read_integer(workload, f"workload.{name}", required=True)
    read_integer(workload, "workload.prompt_tokens", required=True, minimum=0)
    read_choice(workload, "workload.kv_cache_dtype", KV_DTYPES, required=True)
    read_choice(vars(request.engine), "engine.name", ENGINES, required=True)
    offload = vars(request.workload.offload)
    read_number(offload, "workload.offload.fraction", exclusive=False, maximum=1.0)
    read_integer(offload, "workload.offload.layers", minimum=0)


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
