"""Request validation: defaults, and each bad request names the offending field."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from estimator.api import (
    Request,
    RequestError,
    WeightsSpec,
    check_request,
    default_backend,
    parse_request,
    request_to_dict,
)

CONFIGS = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation" / "configs"


def llama_8b_config() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text()
    )
    return loaded


def base_request() -> dict[str, Any]:
    return {
        "model": {"hf_config": llama_8b_config()},
        "weights": {"format": "gguf", "quant": "Q4_K_M"},
        "device": {"memory_gb": 24, "bandwidth_gbps": 1008, "fp16_tflops": 165.2},
        "engine": {"name": "llama.cpp", "backend": "cuda"},
        "workload": {"context_tokens": 8192},
    }


def with_value(path: str, value: Any) -> dict[str, Any]:
    request = copy.deepcopy(base_request())
    *parents, last = path.split(".")
    node = request
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return request


def without(path: str) -> dict[str, Any]:
    request = copy.deepcopy(base_request())
    *parents, last = path.split(".")
    node = request
    for key in parents:
        node = node[key]
    del node[last]
    return request


def test_it_fills_in_the_documented_defaults() -> None:
    request = parse_request(
        {
            "model": {"hf_config": llama_8b_config()},
            "device": {"memory_gb": 24, "bandwidth_gbps": 1008},
        }
    )
    assert request.engine.name == "llama.cpp"
    assert request.engine.backend == "cuda"
    assert request.engine.n_ubatch == 512
    assert request.engine.flash_attention is True
    assert request.weights.format == "gguf" and request.weights.quant == "Q4_K_M"
    assert request.weights.imatrix is True
    assert request.device.count == 1 and request.device.memory_kind == "discrete"
    assert request.workload.context_tokens == 8192
    assert request.workload.concurrent_sequences == 1
    assert request.workload.prompt_tokens == 512 and request.workload.output_tokens == 256
    assert request.workload.kv_cache_dtype == "f16"
    assert request.workload.tensor_parallel == 1
    assert request.workload.offload.fraction == 0.0
    assert request.pricing is None and request.finetune is None


def test_it_defaults_vllm_to_bf16_weights_and_apple_to_unified_memory() -> None:
    vllm = parse_request(with_value("engine", {"name": "vllm"}) | {"weights": None})
    assert (vllm.weights.format, vllm.weights.dtype) == ("hf", "bf16")
    assert vllm.engine.gpu_memory_utilization is None  # memory.py's engine default
    mac = parse_request(
        with_value("device", {"memory_gb": 64, "bandwidth_gbps": 400, "vendor": "apple"})
        | {"engine": None}
    )
    assert mac.device.memory_kind == "unified" and mac.engine.backend == "metal"


@pytest.mark.parametrize(
    ("request_data", "field"),
    [
        (without("model"), "model"),
        (without("model.hf_config"), "model.hf_config"),
        (without("device.memory_gb"), "device.memory_gb"),
        (without("device.bandwidth_gbps"), "device.bandwidth_gbps"),
        (with_value("device.memory_gb", -24), "device.memory_gb"),
        (with_value("device.memory_gb", "24"), "device.memory_gb"),
        (with_value("device.memory_gb", math.nan), "device.memory_gb"),
        (with_value("device.bandwidth_gbps", math.inf), "device.bandwidth_gbps"),
        (with_value("device.count", 0), "device.count"),
        (with_value("device.count", 1.5), "device.count"),
        (with_value("device.vendor", "nvidea"), "device.vendor"),
        (with_value("weights.quant", None) | {"weights": {"format": "gguf"}}, "weights.quant"),
        (with_value("weights.format", "safetensors"), "weights.format"),
        (with_value("weights.file_bytes", -5), "weights.file_bytes"),
        (with_value("weights.imatrix", "yes"), "weights.imatrix"),
        (with_value("engine.name", "exllama"), "engine.name"),
        (with_value("engine.backend", "opencl"), "engine.backend"),
        (with_value("engine.n_ubatch", 0), "engine.n_ubatch"),
        (with_value("engine.gpu_memory_utilization", 1.5), "engine.gpu_memory_utilization"),
        (with_value("engine.type_k", "q3_k"), "engine.type_k"),
        (with_value("workload.context_tokens", -1), "workload.context_tokens"),
        (with_value("workload.context_tokens", "8k"), "workload.context_tokens"),
        (with_value("workload.context_tokens", math.nan), "workload.context_tokens"),
        (with_value("workload.concurrent_sequences", 0), "workload.concurrent_sequences"),
        (with_value("workload.kv_cache_dtype", "int3"), "workload.kv_cache_dtype"),
        (with_value("workload.tensor_parallel", 2), "workload.tensor_parallel"),
        (with_value("workload.offload", {"fraction": 1.5}), "workload.offload.fraction"),
        (with_value("workload.offload", {"layerz": 3}), "workload.offload.layerz"),
        (with_value("workload.prompt_tokens", 9000), "workload.prompt_tokens"),
        (with_value("workload.context", 4096), "workload.context"),
        (with_value("pricing", {"usd_per_hour": -1}), "pricing.usd_per_hour"),
        (with_value("finetune", {"method": "dora"}), "finetune.method"),
        (with_value("model.hf_config.rope_theta", math.nan), "model.hf_config.rope_theta"),
        (with_value("model.hf_config", [1, 2]), "model.hf_config"),
        (with_value("recommend", "yes"), "recommend"),
        (with_value("color", "blue"), "color"),
    ],
)
def test_it_names_the_field_of_a_bad_request(request_data: dict[str, Any], field: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(request_data)
    assert caught.value.field == field
    assert caught.value.message


def test_it_rejects_a_request_that_is_not_an_object() -> None:
    with pytest.raises(RequestError) as caught:
        parse_request([base_request()])
    assert caught.value.field == "request"


def test_it_accepts_integral_floats_for_integer_fields() -> None:
    assert (
        parse_request(with_value("workload.context_tokens", 4096.0)).workload.context_tokens == 4096
    )


def test_it_parses_its_own_request_dict_back_to_the_same_request() -> None:
    request = parse_request(with_value("pricing", {"usd_per_hour": 2.5}))
    assert parse_request(request_to_dict(request)) == request


# --- check_request: the same checks for a Request built in code ------------------------


def _typed(path: str, value: Any) -> Request:
    """The base request parsed, with one field replaced after parsing (as code would)."""
    request = parse_request(base_request())
    section, name = path.split(".")
    return replace(request, **{section: replace(getattr(request, section), **{name: value})})


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("workload.kv_cache_dtype", "fp8", "workload.kv_cache_dtype"),  # llama.cpp: no fp8
        ("workload.tensor_parallel", 2, "workload.tensor_parallel"),  # one device
        ("workload.context_tokens", 0, "workload.context_tokens"),
        ("engine.backend", "tpu", "engine.backend"),  # llama.cpp has no TPU backend
        ("engine.name", "exllama", "engine.name"),
        ("device.memory_gb", 0.0, "device.memory_gb"),
        ("device.count", 0, "device.count"),
        ("weights.quant", "Q9_X", "weights.quant"),
    ],
)
def test_check_request_raises_what_parse_request_raises(path: str, value: Any, field: str) -> None:
    with pytest.raises(RequestError) as typed:
        check_request(_typed(path, value))
    with pytest.raises(RequestError) as parsed:
        parse_request(with_value(path, value))
    assert typed.value.field == parsed.value.field == field
    assert typed.value.message == parsed.value.message


def test_check_request_wants_prompt_and_output_within_the_context() -> None:
    data = with_value("workload.prompt_tokens", 8000)
    data["workload"]["output_tokens"] = 256  # 8,000 + 256 = 8,256 > 8,192
    with pytest.raises(RequestError) as parsed:
        parse_request(data)
    with pytest.raises(RequestError) as typed:
        check_request(_typed("workload.prompt_tokens", 8000))
    assert typed.value.field == parsed.value.field == "workload.prompt_tokens"
    assert typed.value.message == parsed.value.message
    assert "(8256) exceeds context_tokens (8192)" in typed.value.message


def test_check_request_returns_a_valid_request_unchanged() -> None:
    request = parse_request(base_request())
    assert check_request(request) is request
    # An HF dtype the estimator sizes passes; one it does not know names weights.dtype.
    hf = replace(request, weights=WeightsSpec("hf", dtype="awq-int4"))
    vllm = replace(hf, engine=replace(request.engine, name="vllm"))
    assert check_request(vllm) is vllm
    with pytest.raises(RequestError) as bad:
        check_request(replace(vllm, weights=WeightsSpec("hf", dtype="int3")))
    assert bad.value.field == "weights.dtype"


@pytest.mark.parametrize(
    ("engine", "vendor", "backend"),
    [
        ("llama.cpp", "nvidia", "cuda"),
        ("llama.cpp", "apple", "metal"),
        ("llama.cpp", "other", "vulkan"),
        ("mlx", "nvidia", "metal"),
        ("vllm", "amd", "rocm"),
        ("sglang", "apple", "cuda"),
    ],
)
def test_default_backend_is_the_one_parse_request_fills_in(
    engine: str, vendor: str, backend: str
) -> None:
    data = {**base_request(), "engine": {"name": engine}}
    data["device"] = {**data["device"], "vendor": vendor}
    if engine != "llama.cpp":
        data["weights"] = {"format": "hf", "dtype": "bf16"}
    assert default_backend(engine, vendor) == parse_request(data).engine.backend == backend
