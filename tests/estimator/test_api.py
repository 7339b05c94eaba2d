"""The public estimate path: worked examples, JSON round trips and Hypothesis properties."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator.api import (
    RequestError,
    estimate,
    parse_request,
    request_to_dict,
    result_to_dict,
    run_estimate,
)
from estimator.units import GIB
from estimator.validate import rebuilt_config

CONFIGS = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation" / "configs"
FAST = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def config(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return loaded


LLAMA_8B = config("meta-llama__Llama-3.1-8B-Instruct")
QWEN3_MOE = config("Qwen__Qwen3-30B-A3B")
GEMMA2 = config("google__gemma-2-9b-it")


def request(hf_config: dict[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": {"hf_config": hf_config or LLAMA_8B},
        "weights": {"format": "gguf", "quant": "Q4_K_M"},
        "device": {"memory_gb": 24, "bandwidth_gbps": 1008, "fp16_tflops": 165.2},
        "engine": {"name": "llama.cpp", "backend": "cuda"},
        "workload": {"context_tokens": 8192},
    }
    for key, value in sections.items():
        merge = isinstance(value, dict) and key in ("device", "workload", "engine")
        base[key] = {**base.get(key, {}), **value} if merge else value
    return base


# --- worked examples ---------------------------------------------------------------------


def test_it_gives_llama_31_8b_131072_kv_bytes_per_token_in_f16() -> None:
    # 32 layers x 2 (K and V) x 8 KV heads x 128 head_dim x 2 bytes = 131,072 B
    result = estimate(request())
    assert result["kv_cache_bytes_per_token"] == 131_072
    # 8,192 tokens x 131,072 B = 1 GiB exactly (8,192 is a multiple of llama.cpp's 256 pad)
    assert result["kv_cache_bytes"] == 1 * GIB


def test_it_gives_glm_45_air_1_4375_gib_of_f16_kv_at_8192_tokens() -> None:
    # 46 layers x 2 x 8 KV heads x 128 x 2 bytes x 8,192 tokens = 1,543,503,872 B = 1.4375 GiB
    # (the MTP layer caches nothing: llama.cpp's n_layer_kv_from_start leaves it out)
    result = estimate(request(rebuilt_config("GLM-4.5-Air"), device={"memory_gb": 128}))
    assert result["kv_cache_bytes"] == 46 * 2 * 8 * 128 * 2 * 8192 == int(1.4375 * GIB)


def test_it_caches_only_the_mla_latent_for_deepseek_v3_in_vllm() -> None:
    # 61 layers x (kv_lora_rank 512 + rope 64) x 2 bytes = 70,272 B per token
    result = estimate(
        request(
            config("deepseek-ai__DeepSeek-V3"),
            weights={"format": "hf", "dtype": "fp8"},
            engine={"name": "vllm"},
            device={"memory_gb": 1200},
        )
    )
    assert result["kv_cache_bytes_per_token"] == 61 * (512 + 64) * 2


def test_it_reports_vllm_kv_capacity_as_budget_over_bytes_per_token() -> None:
    # usable = 0.9 x 80 GB; KV budget = usable - weights - activation peak - non-torch;
    # tokens = budget // (16 x 131,072 B) x 16, vLLM's num_gpu_blocks x block_size.
    result = estimate(
        request(
            weights={"format": "hf", "dtype": "bf16"},
            engine={"name": "vllm"},
            device={"memory_gb": 80},
        )
    )
    parts = result["overhead_breakdown"]
    budget = (
        result["usable_bytes_per_device"]
        - result["per_device_weights_bytes"]
        - parts["activation_peak"]
        - parts["non_torch"]
    )
    assert result["usable_bytes_per_device"] == int(0.9 * 80e9)
    assert result["kv_cache_capacity_tokens"] == budget // (16 * 131_072) * 16


def test_it_adds_weights_kv_and_overhead_per_device() -> None:
    result = estimate(request())
    assert result["per_device_bytes"] == (
        result["per_device_weights_bytes"] + result["kv_cache_bytes"] + result["overhead_bytes"]
    )
    assert result["fit"]["verdict"] == "comfortable"
    assert result["fit"]["reserve_bytes"] == (
        result["usable_bytes_per_device"] - result["per_device_bytes"]
    )


def test_it_says_a_70b_model_does_not_fit_on_one_24_gb_card() -> None:
    result = estimate(request(config("meta-llama__Llama-3.1-70B-Instruct")))
    assert result["fit"]["verdict"] == "does_not_fit"
    assert result["max_context_tokens"] == 0


def test_it_offloads_moe_experts_to_the_host() -> None:
    on_gpu = estimate(request(QWEN3_MOE, device={"memory_gb": 48}))
    offloaded = estimate(request(QWEN3_MOE, workload={"offload": {"moe_experts": True}}))
    assert offloaded["offloaded_bytes"] > 0.8 * offloaded["weights_bytes"]
    assert offloaded["per_device_weights_bytes"] == (
        offloaded["weights_bytes"] - offloaded["offloaded_bytes"]
    )
    assert offloaded["decode_tokens_per_s"]["estimate"] < on_gpu["decode_tokens_per_s"]["estimate"]


def test_it_keeps_kv_of_offloaded_layers_on_the_host() -> None:
    # 8 of 32 layers on the CPU: a quarter of the weights' layers and of the KV leave the GPU
    full = estimate(request())
    part = estimate(request(workload={"offload": {"layers": 8}}))
    assert part["offloaded_bytes"] > 0
    assert part["per_device_bytes"] == (
        part["per_device_weights_bytes"] + full["kv_cache_bytes"] * 3 // 4 + part["overhead_bytes"]
    )


def test_it_sizes_a_gguf_given_only_by_its_file_size() -> None:
    # Llama-3.1-8B Q4_K_M is 4.92 GB on Hugging Face: the Q4_K_M mix, scaled to that size
    result = estimate(request(weights={"format": "gguf", "file_bytes": 4_920_000_000}))
    assert result["weights_bytes"] == pytest.approx(4_920_000_000, abs=1_000)
    assert any("Q4_K_M" in note for note in result["notes"])


def test_it_explains_figures_with_numbers() -> None:
    result = estimate(request())
    entries = {entry["figure"]: entry for entry in result["explanation"]}
    assert {
        "weights_bytes",
        "kv_cache_bytes",
        "kv_cache_bytes_per_token",
        "overhead_bytes",
        "per_device_bytes",
        "decode_tokens_per_s",
        "prefill_tokens_per_s",
    } <= set(entries)
    kv = entries["kv_cache_bytes_per_token"]
    assert kv["value"] == 131_072
    assert kv["inputs"]["layers"] == 32 and kv["inputs"]["bytes_per_element"] == 2
    for entry in result["explanation"]:
        assert isinstance(entry["value"], int | float) and entry["source"].startswith("estimator/")


def test_it_has_no_prefill_without_tflops_and_says_why() -> None:
    result = estimate(request(device={"fp16_tflops": None}))
    assert result["prefill_tokens_per_s"] is None and result["ttft_s"] is None
    assert any("fp16_tflops" in warning for warning in result["warnings"])


def test_it_prices_tokens_from_the_aggregate_decode_speed() -> None:
    result = estimate(request(pricing={"usd_per_hour": 3.6}))
    speed = result["aggregate_decode_tokens_per_s"]["estimate"]
    # 3.6 USD/h / (speed tok/s x 3,600 s/h) x 1e6 tokens = 1e3 / speed USD per 1M tokens
    assert result["cost"]["rent_usd_per_million_output_tokens"]["estimate"] == pytest.approx(
        1e3 / speed
    )


def test_it_sizes_qlora_below_lora_below_full_finetuning() -> None:
    totals = [
        estimate(request(finetune={"method": m}))["finetune"]["total_bytes"]
        for m in ("qlora", "lora", "full")
    ]
    assert totals == sorted(totals)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"workload": {"context_tokens": 200_000}}, "workload.context_tokens"),
        ({"weights": {"format": "gguf", "quant": "Q9_K"}}, "weights.quant"),
        (
            {"model": {"hf_config": {"model_type": "mystery", "hidden_size": 4096}}},
            "model.hf_config.num_hidden_layers",
        ),
        ({"workload": {"offload": {"layers": 99}}}, "workload.offload.layers"),
        (
            {"engine": {"name": "vllm"}, "weights": {"format": "hf", "dtype": "int3"}},
            "weights.dtype",
        ),
        (
            {
                "engine": {"name": "llama.cpp", "flash_attention": False},
                "workload": {"kv_cache_dtype": "q8_0"},
            },
            "workload.kv_cache_dtype",
        ),
    ],
)
def test_it_names_the_field_of_a_request_the_model_rejects(
    changes: dict[str, Any], field: str
) -> None:
    bad = request()
    for key, value in changes.items():
        bad[key] = value
    with pytest.raises(RequestError) as caught:
        estimate(bad)
    assert caught.value.field == field


# --- JSON round trips --------------------------------------------------------------------

requests = st.fixed_dictionaries(
    {
        "quant": st.sampled_from(["Q4_K_M", "Q8_0", "IQ4_XS", "Q2_K"]),
        "context": st.integers(min_value=1024, max_value=131_072),
        "sequences": st.integers(min_value=1, max_value=8),
        "memory_gb": st.floats(min_value=4, max_value=200),
        "bandwidth": st.floats(min_value=50, max_value=8000),
        "engine": st.sampled_from(["llama.cpp", "vllm", "ollama", "sglang"]),
        "id": st.one_of(st.none(), st.text(min_size=1, max_size=8).filter(str.strip)),
    }
)


def build(draw: dict[str, Any]) -> dict[str, Any]:
    llama = draw["engine"] in ("llama.cpp", "ollama")
    weights = (
        {"format": "gguf", "quant": draw["quant"]} if llama else {"format": "hf", "dtype": "bf16"}
    )
    out = request(
        weights=weights,
        engine={"name": draw["engine"]},
        device={"memory_gb": draw["memory_gb"], "bandwidth_gbps": draw["bandwidth"]},
        workload={"context_tokens": draw["context"], "concurrent_sequences": draw["sequences"]},
    )
    out["engine"] = {"name": draw["engine"]}
    if draw["id"] is not None:
        out["id"] = draw["id"]
    return out


@FAST
@given(requests)
def test_it_round_trips_results_through_json(draw: dict[str, Any]) -> None:
    result = result_to_dict(run_estimate(parse_request(build(draw))))
    assert json.loads(json.dumps(result, allow_nan=False)) == result


@FAST
@given(requests)
def test_it_round_trips_requests_through_their_dict(draw: dict[str, Any]) -> None:
    parsed = parse_request(build(draw))
    again = parse_request(json.loads(json.dumps(request_to_dict(parsed))))
    assert again == parsed


# --- properties --------------------------------------------------------------------------


def per_device(req: dict[str, Any]) -> int:
    return int(estimate(req)["per_device_bytes"])


@FAST
@given(
    st.sampled_from([LLAMA_8B, QWEN3_MOE, GEMMA2]),
    st.sampled_from(["llama.cpp", "vllm"]),
    st.integers(min_value=512, max_value=4000),
    st.integers(min_value=1, max_value=4000),
)
def test_memory_never_decreases_with_context(
    hf: dict[str, Any], engine: str, context: int, more: int
) -> None:
    weights = (
        {"format": "gguf", "quant": "Q4_K_M"}
        if engine == "llama.cpp"
        else {"format": "hf", "dtype": "bf16"}
    )
    small = request(
        hf, weights=weights, engine={"name": engine}, workload={"context_tokens": context}
    )
    large = copy.deepcopy(small)
    large["workload"]["context_tokens"] = context + more
    assert per_device(large) >= per_device(small)
    assert estimate(large)["kv_cache_bytes"] >= estimate(small)["kv_cache_bytes"]


@FAST
@given(
    st.sampled_from([LLAMA_8B, QWEN3_MOE, GEMMA2]),
    st.integers(min_value=1, max_value=16),
    st.integers(min_value=1, max_value=16),
)
def test_memory_never_decreases_with_concurrency(
    hf: dict[str, Any], sequences: int, more: int
) -> None:
    small = request(hf, workload={"context_tokens": 2048, "concurrent_sequences": sequences})
    large = request(hf, workload={"context_tokens": 2048, "concurrent_sequences": sequences + more})
    assert per_device(large) >= per_device(small)


LADDER = ["IQ2_XXS", "Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "BF16"]


@FAST
@given(
    st.sampled_from([LLAMA_8B, QWEN3_MOE, GEMMA2]),
    st.integers(min_value=0, max_value=len(LADDER) - 2),
)
def test_memory_never_decreases_with_bits_per_weight(hf: dict[str, Any], index: int) -> None:
    lower = request(hf, weights={"format": "gguf", "quant": LADDER[index]})
    higher = request(hf, weights={"format": "gguf", "quant": LADDER[index + 1]})
    assert estimate(higher)["weights_bytes"] >= estimate(lower)["weights_bytes"]
    assert per_device(higher) >= per_device(lower)


@FAST
@given(
    st.sampled_from([LLAMA_8B, QWEN3_MOE]),
    st.sampled_from(["llama.cpp", "vllm"]),
    st.floats(min_value=50, max_value=5000),
    st.floats(min_value=1.0, max_value=10.0),
    st.sampled_from(["consumer", "datacenter"]),
)
def test_more_bandwidth_is_never_slower_within_a_device_class(
    hf: dict[str, Any], engine: str, bandwidth: float, factor: float, device_class: str
) -> None:
    # Across classes it can be: speed.device_class_for switches to "datacenter" (lower
    # fitted bandwidth share) at 1,500 GB/s for unnamed devices.
    weights = (
        {"format": "gguf", "quant": "Q4_K_M"}
        if engine == "llama.cpp"
        else {"format": "hf", "dtype": "bf16"}
    )
    slow = request(
        hf,
        weights=weights,
        engine={"name": engine},
        device={"memory_gb": 200, "bandwidth_gbps": bandwidth, "device_class": device_class},
    )
    fast = request(
        hf,
        weights=weights,
        engine={"name": engine},
        device={
            "memory_gb": 200,
            "bandwidth_gbps": bandwidth * factor,
            "device_class": device_class,
        },
    )
    assert (
        estimate(fast)["decode_tokens_per_s"]["estimate"]
        >= estimate(slow)["decode_tokens_per_s"]["estimate"]
    )


@FAST
@given(st.sampled_from([LLAMA_8B, QWEN3_MOE, GEMMA2]), st.sampled_from(["bf16", "fp8", "awq-int4"]))
def test_tensor_parallel_2_halves_per_device_weights_except_replicated_parts(
    hf: dict[str, Any], dtype: str
) -> None:
    one = estimate(
        request(
            hf,
            weights={"format": "hf", "dtype": dtype},
            engine={"name": "vllm"},
            device={"memory_gb": 80},
        )
    )
    two = estimate(
        request(
            hf,
            weights={"format": "hf", "dtype": dtype},
            engine={"name": "vllm"},
            device={"memory_gb": 80, "count": 2},
            workload={"tensor_parallel": 2},
        )
    )
    weights = one["weights_bytes"]
    assert one["per_device_weights_bytes"] == weights
    assert weights / 2 <= two["per_device_weights_bytes"] <= weights / 2 + 0.02 * weights
