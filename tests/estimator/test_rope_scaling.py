"""RoPE scaling and the context a model allows: native length, extended length, refusals.

Sources: vLLM vllm/config/model.py _get_and_verify_max_len (yarn: original x factor;
longrope / llama3: max_position_embeddings as given; other types: max_position_embeddings x
factor); the Qwen3 model cards, 'Processing Long Texts' (huggingface.co/Qwen/Qwen3-8B: "add
the rope_scaling fields: rope_type yarn, factor 4.0, original_max_position_embeddings
32768"; "The default max_position_embeddings in config.json is set to 40,960").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.api import RequestError, estimate, parse_request, request_to_dict
from estimator.kv import max_context_that_fits
from estimator.model import ConfigError, parse_hf_config
from estimator.model.spec import RopeScaling

ROOT = Path(__file__).resolve().parents[2]
VALIDATION = ROOT / "estimator" / "data" / "validation" / "configs"
CATALOG = ROOT / "catalog" / "data" / "configs"

# The Qwen3 model card's YaRN block, as the card says to add it to config.json.
QWEN3_YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


def load(folder: Path, name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((folder / f"{name}.json").read_text())
    return result


QWEN3_8B = load(VALIDATION, "Qwen__Qwen3-8B")
DEEPSEEK_V3 = load(VALIDATION, "deepseek-ai__DeepSeek-V3")


def request(hf_config: dict[str, Any], context_tokens: int) -> dict[str, Any]:
    return {
        "model": {"hf_config": hf_config},
        "weights": {"format": "gguf", "quant": "Q4_K_M"},
        "device": {"memory_gb": 80, "bandwidth_gbps": 3350},
        "engine": {"name": "llama.cpp", "backend": "cuda"},
        "workload": {"context_tokens": context_tokens},
    }


# --- what the config says --------------------------------------------------------------


def test_qwen3_8b_as_released_has_no_scaling_and_40960_tokens() -> None:
    spec = parse_hf_config(QWEN3_8B)
    assert QWEN3_8B["max_position_embeddings"] == 40960
    assert spec.rope_scaling is None and spec.rope_scaling_type is None
    assert spec.max_context_tokens == spec.native_context_tokens == 40960
    assert spec.extended_context_tokens == 40960
    # The card's 131,072 is passed in (catalog rope_scaling_max_context_tokens).
    assert spec.allowed_context_tokens() == 40960
    assert spec.allowed_context_tokens(131072) == 131072


def test_qwen3_8b_with_the_cards_yarn_block_extends_to_131072() -> None:
    spec = parse_hf_config({**QWEN3_8B, "rope_scaling": QWEN3_YARN})
    assert spec.rope_scaling == RopeScaling("yarn", 4.0, 32768)
    assert spec.max_context_tokens == 40960  # max_position_embeddings, as the config says
    assert spec.native_context_tokens == 32768
    assert spec.extended_context_tokens == 32768 * 4 == 131072


def test_transformers_5_rope_parameters_read_like_rope_scaling() -> None:
    params = {**QWEN3_YARN, "rope_theta": 1000000.0}
    config = {k: v for k, v in QWEN3_8B.items() if k != "rope_scaling"}
    spec = parse_hf_config({**config, "rope_parameters": params})
    assert spec.rope_scaling_type == "yarn"
    assert spec.extended_context_tokens == 131072


def test_deepseek_v3_yarn_stays_at_its_config_maximum() -> None:
    # rope_scaling yarn, factor 40, original 4,096: 40 x 4,096 = 163,840 = max_position_embeddings
    spec = parse_hf_config(DEEPSEEK_V3)
    assert spec.rope_scaling == RopeScaling("yarn", 40.0, 4096)
    assert spec.native_context_tokens == 4096
    assert spec.max_context_tokens == spec.extended_context_tokens == 163840


def test_llama_31_llama3_scaling_is_already_in_max_position_embeddings() -> None:
    # llama3: factor 8, original 8,192; vLLM leaves max_position_embeddings (131,072) alone.
    spec = parse_hf_config(load(VALIDATION, "meta-llama__Llama-3.1-8B-Instruct"))
    assert spec.rope_scaling_type == "llama3"
    assert (spec.native_context_tokens, spec.extended_context_tokens) == (8192, 131072)


def test_phi_35_longrope_takes_the_top_level_original_length() -> None:
    # Phi-3.5-mini: rope_scaling {type: longrope}, original_max_position_embeddings 4096 at
    # the top level, max_position_embeddings 131,072.
    spec = parse_hf_config(load(CATALOG, "microsoft__Phi-3.5-mini-instruct"))
    assert spec.rope_scaling == RopeScaling("longrope", None, 4096)
    assert (spec.native_context_tokens, spec.extended_context_tokens) == (4096, 131072)


def test_linear_and_dynamic_scale_max_position_embeddings() -> None:
    # vLLM: max_position_embeddings x factor for types other than yarn/longrope/llama3.
    base = {**QWEN3_8B, "max_position_embeddings": 4096}
    linear = parse_hf_config({**base, "rope_scaling": {"type": "linear", "factor": 2.0}})
    dynamic = parse_hf_config({**base, "rope_scaling": {"rope_type": "dynamic", "factor": 4}})
    assert linear.extended_context_tokens == 4096 * 2 == 8192
    assert dynamic.extended_context_tokens == 4096 * 4 == 16384
    assert linear.native_context_tokens == dynamic.native_context_tokens == 4096


def test_default_rope_type_is_no_scaling() -> None:
    glm5 = parse_hf_config(load(CATALOG, "zai-org__GLM-5"))  # rope_parameters rope_type default
    assert glm5.rope_scaling is None
    assert glm5.extended_context_tokens == glm5.max_context_tokens == 202752


def test_a_bad_factor_is_a_config_error_for_a_dedicated_parser() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_hf_config({**QWEN3_8B, "rope_scaling": {"rope_type": "yarn", "factor": "4"}})
    assert caught.value.field == "rope_scaling.factor"


def test_the_fallback_parser_ignores_a_malformed_block() -> None:
    config = {**QWEN3_8B, "model_type": "not_a_known_type", "rope_scaling": {"type": 4}}
    spec = parse_hf_config(config)
    assert spec.is_fallback and spec.rope_scaling is None


@given(
    original=st.integers(min_value=256, max_value=2**20),
    factor=st.floats(min_value=1.0, max_value=64.0, allow_nan=False),
    max_pos=st.integers(min_value=256, max_value=2**22),
)
def test_yarn_extends_to_original_times_factor_never_below_the_config(
    original: int, factor: float, max_pos: int
) -> None:
    rope = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original}
    spec = parse_hf_config({**QWEN3_8B, "max_position_embeddings": max_pos, "rope_scaling": rope})
    assert spec.extended_context_tokens == max(max_pos, int(original * factor))
    assert spec.native_context_tokens == min(original, max_pos)
    assert spec.native_context_tokens <= spec.max_context_tokens <= spec.extended_context_tokens


# --- what a request may ask for ------------------------------------------------------------


def test_a_model_without_scaling_is_refused_above_its_native_length() -> None:
    assert estimate(request(QWEN3_8B, 40960))["kv_cache_bytes"] > 0
    with pytest.raises(RequestError) as caught:
        estimate(request(QWEN3_8B, 40961))
    assert caught.value.field == "workload.context_tokens"
    assert caught.value.message == "40961 exceeds the model's maximum context of 40960 tokens"


def test_the_cards_yarn_config_takes_131072_tokens_and_refuses_131073() -> None:
    yarn = {**QWEN3_8B, "rope_scaling": QWEN3_YARN}
    result = estimate(request(yarn, 131072))
    # KV follows the longer context: 36 layers x 2 x 8 KV heads x 128 x 2 B = 147,456 B
    # per token; 131,072 tokens (a multiple of llama.cpp's 256 pad) x 147,456 B = 18 GiB.
    assert result["kv_cache_bytes"] == 131072 * 147456 == 18 * 2**30
    assert any("RoPE scaling (yarn, factor 4) active" in note for note in result["notes"])
    with pytest.raises(RequestError) as caught:
        estimate(request(yarn, 131073))
    assert caught.value.message == (
        "131073 exceeds the model's maximum context of 131072 tokens with RoPE scaling (yarn)"
    )


def test_deepseek_v3_is_refused_above_its_config_maximum() -> None:
    with pytest.raises(RequestError) as caught:
        estimate(request(DEEPSEEK_V3, 163841))
    assert caught.value.message == "163841 exceeds the model's maximum context of 163840 tokens"


def test_no_rope_note_within_the_native_length() -> None:
    yarn = {**QWEN3_8B, "rope_scaling": QWEN3_YARN}
    result = estimate(request(yarn, 32768))
    assert not any("RoPE scaling" in note for note in result["notes"])


def test_the_longest_fitting_context_may_reach_the_extended_length() -> None:
    # Budget for 131,072 tokens of f16 KV (18 GiB): the search is capped at the extended
    # length, not at max_position_embeddings (40,960).
    yarn = parse_hf_config({**QWEN3_8B, "rope_scaling": QWEN3_YARN})
    plain = parse_hf_config(QWEN3_8B)
    assert max_context_that_fits(yarn, 18 * 2**30, engine="llama.cpp") == 131072
    assert max_context_that_fits(plain, 18 * 2**30, engine="llama.cpp") == 40960


def test_a_card_stated_limit_in_the_request_lifts_the_config_maximum() -> None:
    # The catalog passes Qwen3-8B's card length (131,072 with YaRN) as model.max_context_tokens.
    body = request(QWEN3_8B, 131072)
    body["model"]["max_context_tokens"] = 131072
    result = estimate(body)
    assert result["kv_cache_bytes"] == 131072 * 147456
    assert any("exceeds the 40960 tokens of config.json" in note for note in result["notes"])
    assert request_to_dict(parse_request(body))["model"]["max_context_tokens"] == 131072
    body["workload"]["context_tokens"] = 131073
    with pytest.raises(RequestError) as caught:
        estimate(body)
    assert caught.value.message == (
        "131073 exceeds the model's maximum context of 131072 tokens with RoPE scaling (model card)"
    )
