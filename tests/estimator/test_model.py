"""parse_hf_config: worked examples, published parameter counts, unreadable configs."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from estimator.model import ConfigError, ModelSpec, parse_hf_config
from estimator.model.csv_configs import CSV_REBUILDS, config_from_csv_row

DATA = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation"
CONFIGS = DATA / "configs"


def load_config(name: str) -> dict[str, Any]:
    with (CONFIGS / f"{name}.json").open() as f:
        result: dict[str, Any] = json.load(f)
    return result


def csv_rows() -> dict[str, dict[str, str]]:
    with (DATA / "model_configs.csv").open() as f:
        return {row["model"]: row for row in csv.DictReader(f)}


# Verbatim config fixture -> model_configs.csv row it must reproduce.
VERBATIM = {
    "meta-llama__Llama-3.1-8B-Instruct": "Llama-3.1-8B",
    "meta-llama__Llama-3.1-70B-Instruct": "Llama-3.1-70B",
    "meta-llama__Llama-3.2-3B": "Llama-3.2-3B",
    "Qwen__Qwen2.5-7B-Instruct": "Qwen2.5-7B-Instruct",
    "Qwen__Qwen2.5-72B-Instruct": "Qwen2.5-72B-Instruct",
    "Qwen__Qwen3-0.6B": "Qwen3-0.6B",
    "Qwen__Qwen3-8B": "Qwen3-8B",
    "Qwen__Qwen3-32B": "Qwen3-32B",
    "Qwen__Qwen3-30B-A3B": "Qwen3-30B-A3B",
    "Qwen__Qwen3-235B-A22B": "Qwen3-235B-A22B",
    "deepseek-ai__DeepSeek-V3": "DeepSeek-V3",
    "deepseek-ai__DeepSeek-R1": "DeepSeek-R1",
    "moonshotai__Kimi-K2-Instruct": "Kimi-K2-Instruct",
    "openai__gpt-oss-20b": "gpt-oss-20b",
    "openai__gpt-oss-120b": "gpt-oss-120b",
    "google__gemma-2-9b-it": "Gemma-2-9B-it",
    "microsoft__phi-4": "Phi-4",
    "mistralai__Mistral-7B-Instruct-v0.3": "Mistral-7B-Instruct-v0.3",
    "mistralai__Mixtral-8x7B-Instruct-v0.1": "Mixtral-8x7B-Instruct-v0.1",
}


@pytest.mark.parametrize("fixture,row_name", sorted(VERBATIM.items()))
def test_it_reproduces_published_param_counts_from_verbatim_configs(
    fixture: str, row_name: str
) -> None:
    row = csv_rows()[row_name]
    spec = parse_hf_config(load_config(fixture))
    assert spec.params_total == int(row["params_total_computed"])
    assert spec.params_active == int(row["params_active_computed"])


def test_it_counts_llama_3_1_8b_exactly() -> None:
    # 32 x (4096*4096*2 [q, o] + 4096*1024*2 [k, v] + 3*4096*14336 [gate, up, down]
    #       + 2*4096 [two norms]) + 2*128256*4096 [embd, output] + 4096 [final norm]
    # = 32 x 218,112,000 + 1,050,673,152 + 4096 = 8,030,261,248
    spec = parse_hf_config(load_config("meta-llama__Llama-3.1-8B-Instruct"))
    expected = 32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336 + 2 * 4096)
    expected += 2 * 128256 * 4096 + 4096
    assert expected == 8_030_261_248
    assert spec.params_total == expected
    assert spec.gguf_arch == "llama"
    assert not spec.is_fallback
    assert [t.name for t in spec.tensors[:3]] == ["token_embd", "output_norm", "output"]


def test_it_reads_an_unknown_model_type_with_the_fallback_parser() -> None:
    spec = parse_hf_config(
        {
            "model_type": "brand_new",
            "hidden_size": 1024,
            "num_attention_heads": 8,
            "num_hidden_layers": 4,
        }
    )
    assert spec.is_fallback
    assert any("fallback" in note for note in spec.notes)
    assert spec.intermediate_size == 4096


@pytest.mark.parametrize(
    "bad,field",
    [
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"hidden_size": -1}, "hidden_size"),
        ({"hidden_size": "4096"}, "hidden_size"),
        ({"hidden_size": math.nan}, "hidden_size"),
        ({"num_key_value_heads": 5}, "num_key_value_heads"),
        ({"model_type": 3}, "model_type"),
    ],
)
def test_it_rejects_unreadable_configs_naming_the_field(bad: dict[str, Any], field: str) -> None:
    config = load_config("meta-llama__Llama-3.1-8B-Instruct") | bad
    with pytest.raises(ConfigError) as err:
        parse_hf_config(config)
    assert err.value.field == field
    assert isinstance(err.value, ValueError)


def test_it_needs_layers_for_an_unknown_model_type() -> None:
    with pytest.raises(ConfigError):
        parse_hf_config({"model_type": "brand_new", "hidden_size": 1024})


def test_it_counts_every_tensor_element_once(spec: ModelSpec | None = None) -> None:
    spec = parse_hf_config(load_config("Qwen__Qwen3-30B-A3B"))
    names = [t.name for t in spec.tensors]
    assert len(names) == len(set(names))
    assert all(t.n_elements == math.prod(t.shape) for t in spec.tensors)


RECONSTRUCTED = CSV_REBUILDS


def config_from_row(row: dict[str, str], model_type: str, extra: dict[str, Any]) -> dict[str, Any]:
    """A config.json dict rebuilt from model_configs.csv columns."""
    return config_from_csv_row(row, model_type, extra)


@pytest.mark.parametrize("row_name", sorted(RECONSTRUCTED))
def test_it_reproduces_published_param_counts_from_csv_rebuilt_configs(row_name: str) -> None:
    row = csv_rows()[row_name]
    model_type, extra = RECONSTRUCTED[row_name]
    spec = parse_hf_config(config_from_row(row, model_type, extra))
    assert spec.params_total == int(row["params_total_computed"])
    active_gap = 0
    if model_type == "glm4_moe":
        # The CSV's GLM active counts leave out the router's e_score_correction_bias
        # (n_experts per MoE layer) although its totals and DeepSeek rows include it:
        # GLM-4.5 89 x 160 = 14,240 (4e-7 of active), Air 45 x 128 = 5,760.
        active_gap = sum(layer.is_moe for layer in spec.layers) * spec.n_experts
    assert spec.params_active - active_gap == int(row["params_active_computed"])


def test_every_csv_row_has_a_param_count_test() -> None:
    covered = set(VERBATIM.values()) | set(RECONSTRUCTED)
    assert set(csv_rows()) == covered


def rebuilt(row_name: str) -> ModelSpec:
    model_type, extra = RECONSTRUCTED[row_name]
    return parse_hf_config(config_from_row(csv_rows()[row_name], model_type, extra))


def attention_counts(spec: ModelSpec) -> dict[str, int]:
    counts: dict[str, int] = {}
    for layer in spec.layers:
        counts[layer.attention] = counts.get(layer.attention, 0) + 1
    return counts


def test_it_alternates_gemma2_sliding_and_global_layers() -> None:
    spec = parse_hf_config(load_config("google__gemma-2-9b-it"))
    # tie_word_embeddings absent: Gemma2Config default True, so no output tensor
    assert spec.tie_word_embeddings
    assert "output" not in {t.name for t in spec.tensors}
    assert [lay.attention for lay in spec.layers[:3]] == ["sliding", "full", "sliding"]
    assert spec.layers[0].window_tokens == 4096
    assert attention_counts(spec) == {"sliding": 21, "full": 21}


@pytest.mark.parametrize(
    "row_name,local,glob", [("Gemma-3-1B-it", 22, 4), ("Gemma-3-27B-it", 52, 10)]
)
def test_it_gives_gemma3_five_local_layers_per_global_one(
    row_name: str, local: int, glob: int
) -> None:
    spec = rebuilt(row_name)
    assert attention_counts(spec) == {"sliding": local, "full": glob}
    assert spec.layers[5].attention == "full"


def test_it_reads_gemma3_from_a_multimodal_wrapper() -> None:
    config = {
        "model_type": "gemma3",
        "text_config": {
            "hidden_size": 2560,
            "intermediate_size": 10240,
            "num_hidden_layers": 34,
            "sliding_window": 1024,
        },
    }
    spec = parse_hf_config(config)
    assert spec.model_type == "gemma3_text"
    assert spec.params_total == 3_880_263_168  # Gemma-3-4B-it, vocab 262208 by default
    assert spec.layers[0].window_tokens == 1024


def test_it_marks_gpt_oss_sliding_layers_and_sinks() -> None:
    spec = parse_hf_config(load_config("openai__gpt-oss-20b"))
    assert attention_counts(spec) == {"sliding": 12, "full": 12}
    assert spec.layers[0].window_tokens == 128
    names = {t.name for t in spec.tensors}
    assert {"blk.0.attn_sinks", "blk.0.attn_q.bias", "blk.0.ffn_down_exps.bias"} <= names


def test_it_chunks_llama4_rope_layers_and_keeps_nope_layers_global() -> None:
    spec = rebuilt("Llama-4-Maverick-17B-128E")
    assert attention_counts(spec) == {"chunked": 36, "full": 12}
    assert spec.layers[3].attention == "full"
    assert spec.layers[0].window_tokens == 8192
    # interleave_moe_layer_step 2: odd layers MoE
    assert [lay.is_moe for lay in spec.layers[:4]] == [False, True, False, True]


def test_it_gives_qwen3_next_linear_layers_a_fixed_state() -> None:
    spec = rebuilt("Qwen3-Next-80B-A3B")
    assert attention_counts(spec) == {"linear": 36, "full": 12}
    linear = spec.layers[0]
    # (conv: (4 - 1) x (2 x 16 x 128 + 32 x 128) + recurrent: 32 x 128 x 128) x 4 bytes
    assert linear.linear_state_bytes_per_seq == (3 * 8192 + 32 * 128 * 128) * 4
    assert linear.n_kv_heads == 0
    assert spec.layers[3].n_kv_heads == 2 and spec.layers[3].head_dim_k == 256


def test_it_reads_deepseek_mla_and_dense_first_layers() -> None:
    spec = parse_hf_config(load_config("deepseek-ai__DeepSeek-V3"))
    assert spec.mla is not None and spec.mla.kv_lora_rank == 512
    assert spec.gguf_arch == "deepseek2"
    assert [lay.is_moe for lay in spec.layers[:4]] == [False, False, False, True]
    assert spec.layers[0].attention == "mla"
    assert spec.layers[0].head_dim_k == 512 + 64


def test_it_fills_qwen2_moe_defaults_from_transformers() -> None:
    spec = parse_hf_config({"model_type": "qwen2_moe"})
    # Qwen2MoeConfig(): 24 layers, hidden 2048, 60 experts top-4, moe width 1408,
    # shared expert 5632 behind a sigmoid gate
    assert (spec.n_layers, spec.hidden_size, spec.n_experts) == (24, 2048, 60)
    assert spec.n_experts_per_token == 4 and spec.moe_intermediate_size == 1408
    names = {t.name for t in spec.tensors}
    assert {"blk.0.ffn_gate_inp_shexp", "blk.0.ffn_up_shexp", "blk.0.attn_q.bias"} <= names


def test_it_keeps_phi3_fused_qkv_and_gate_up_as_llama_cpp_does() -> None:
    spec = parse_hf_config(load_config("microsoft__phi-4"))
    shapes = {t.name: t.shape for t in spec.tensors}
    assert shapes["blk.0.attn_qkv"] == ((40 + 2 * 10) * 128, 5120)
    assert shapes["blk.0.ffn_up"] == (2 * 17920, 5120)
    assert "blk.0.ffn_gate" not in shapes
