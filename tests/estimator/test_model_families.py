"""Worked examples for the hybrid, sparse and generic parsers (layer specs, states, keys)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from estimator.model import ConfigError, parse_hf_config
from estimator.model.hybrid import ffn_mult_to_width

CONFIGS = Path(__file__).resolve().parents[2] / "catalog" / "data" / "configs"


def load(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return result


def test_it_derives_the_layer_count_of_nemotron_3_ultra_from_its_block_list() -> None:
    config = load("nvidia__NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16")
    assert "num_hidden_layers" not in config
    spec = parse_hf_config(config)
    assert spec.n_layers == len(config["layers_block_type"]) == 108
    assert spec.gguf_arch == "nemotron_h_moe"
    assert not spec.is_fallback


def test_it_gives_nemotron_h_mamba_layers_a_fixed_f32_state() -> None:
    # d_inner = 256 heads x 64 = 16384; conv_dim = 16384 + 2 x 8 groups x 256 = 20480;
    # state = (3 x 20480 + 256 x 64 x 256) x 4 B = (61,440 + 4,194,304) x 4 = 17,022,976 B.
    spec = parse_hf_config(load("nvidia__Nemotron-H-56B-Base-8K"))
    pattern = load("nvidia__Nemotron-H-56B-Base-8K")["hybrid_override_pattern"]
    mamba = [spec.layers[i] for i, ch in enumerate(pattern) if ch == "M"]
    attn = [spec.layers[i] for i, ch in enumerate(pattern) if ch == "*"]
    mlp = [spec.layers[i] for i, ch in enumerate(pattern) if ch == "-"]
    assert {layer.linear_state_bytes_per_seq for layer in mamba} == {17_022_976}
    assert all(layer.attention == "linear" and layer.n_kv_heads == 0 for layer in mamba)
    assert {(layer.attention, layer.n_kv_heads, layer.head_dim_k) for layer in attn} == {
        ("full", 8, 128)
    }
    assert {(layer.attention, layer.linear_state_bytes_per_seq) for layer in mlp} == {("linear", 0)}


def test_it_sizes_nemotron_3_super_latent_experts_without_a_gate() -> None:
    spec = parse_hf_config(load("nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8"))
    names = {t.name.split(".", 2)[-1] for t in spec.tensors if t.kind == "expert"}
    assert names == {"ffn_up_exps", "ffn_down_exps"}
    up = next(t for t in spec.tensors if t.name.endswith("ffn_up_exps"))
    assert up.shape == (512, 2688, 1024)  # experts x width x moe_latent_size


def test_it_reads_deci_block_configs() -> None:
    # ffn_mult 5.25 x 8192 x 2 / 3 = 28672 (already a multiple of 256).
    assert ffn_mult_to_width(5.25, 8192) == 28672
    assert ffn_mult_to_width(1.3125, 8192) == 7168
    spec = parse_hf_config(load("nvidia__Llama-3_3-Nemotron-Super-49B-v1"))
    with_attention = [layer for layer in spec.layers if layer.n_kv_heads]
    assert len(with_attention) == 49
    assert {layer.n_kv_heads for layer in with_attention} == {8}
    assert spec.gguf_arch == "deci"


def test_it_gives_qwen3_5_linear_layers_the_gated_deltanet_state() -> None:
    # key dim 16 x 128 = 2048, value dim 48 x 128 = 6144, conv dim 2 x 2048 + 6144 = 10240;
    # (3 x 10240 + 48 x 128 x 128) x 4 B = (30,720 + 786,432) x 4 = 3,268,608 B.
    spec = parse_hf_config(load("Qwen__Qwen3.5-27B"))
    states = {
        layer.linear_state_bytes_per_seq for layer in spec.layers if layer.attention == "linear"
    }
    assert states == {3_268_608}
    assert sum(layer.attention == "full" for layer in spec.layers) == 16
    assert spec.gguf_arch == "qwen35"
    # tie_word_embeddings false sits on the wrapper only: the output head is present.
    assert any(t.name == "output" for t in spec.tensors)


def test_it_drops_v_on_gemma4_full_layers_and_keeps_sliding_windows() -> None:
    spec = parse_hf_config(load("google__gemma-4-26B-A4B"))
    full = [layer.index for layer in spec.layers if layer.attention == "full"]
    assert len(full) == 5
    names = {t.name for t in spec.tensors}
    assert f"blk.{full[0]}.attn_v" not in names
    assert "blk.0.attn_v" in names
    assert {layer.window_tokens for layer in spec.layers if layer.attention == "sliding"} == {1024}
    assert spec.layers[full[0]].head_dim_k == 512
    assert spec.n_experts == 128 and spec.n_experts_per_token == 8


def test_it_gives_glm_5_2_shared_indexer_layers_no_indexer_weights() -> None:
    config = load("zai-org__GLM-5.2")
    spec = parse_hf_config(config)
    owners = {t.layer for t in spec.tensors if ".indexer." in t.name}
    expected = {i for i, kind in enumerate(config["indexer_types"]) if kind == "full"}
    assert owners == expected
    assert spec.gguf_arch == "glm-dsa"
    assert all(layer.attention == "mla" for layer in spec.layers)


def test_it_splits_mimo_v2_flash_into_full_and_sliding_layers() -> None:
    spec = parse_hf_config(load("XiaomiMiMo__MiMo-V2-Flash"))
    full = [layer for layer in spec.layers if layer.attention == "full"]
    swa = [layer for layer in spec.layers if layer.attention == "sliding"]
    assert (len(full), len(swa)) == (9, 39)
    assert {(layer.n_kv_heads, layer.head_dim_k, layer.head_dim_v) for layer in full} == {
        (4, 192, 128)
    }
    assert {(layer.n_kv_heads, layer.window_tokens) for layer in swa} == {(8, 128)}


# ERNIE-4.5-21B-A3B and Hunyuan-A13B config values (model cards: 21B/3B and 80B/13B).
ERNIE_21B = {
    "model_type": "ernie4_5_moe",
    "hidden_size": 2560,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "moe_k": 6,
    "moe_num_experts": 64,
    "moe_num_shared_experts": 2,
    "moe_layer_start_index": 1,
    "num_attention_heads": 20,
    "num_key_value_heads": 4,
    "num_hidden_layers": 28,
    "vocab_size": 103424,
    "tie_word_embeddings": True,
    "head_dim": 128,
}
HUNYUAN_A13B = {
    "model_type": "hunyuan_v1_moe",
    "hidden_size": 4096,
    "intermediate_size": 3072,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 128167,
    "num_experts": 64,
    "moe_topk": [8] * 32,
    "moe_intermediate_size": [3072] * 32,
    "num_shared_expert": [1] * 32,
    "tie_word_embeddings": True,
    "use_qk_norm": True,
}


@pytest.mark.parametrize(
    "config,arch,total,active",
    [
        (ERNIE_21B, "ernie4_5-moe", 21e9, None),
        (HUNYUAN_A13B, "hunyuan-moe", 80e9, 13e9),
    ],
)
def test_it_sizes_models_without_a_catalog_config(
    config: dict[str, Any], arch: str, total: float, active: float | None
) -> None:
    spec = parse_hf_config(config)
    assert spec.gguf_arch == arch and not spec.is_fallback
    assert abs(spec.params_total / total - 1) <= 0.05
    if active:
        assert abs(spec.params_active / active - 1) <= 0.05


def test_it_puts_ernie_experts_from_the_start_index_on() -> None:
    spec = parse_hf_config(ERNIE_21B)
    assert [layer.is_moe for layer in spec.layers[:2]] == [False, True]
    assert sum(layer.is_moe for layer in spec.layers) == 27


def test_the_generic_fallback_counts_experts_and_names_its_keys() -> None:
    # 2 layers: layer 0 dense (first_k_dense_replace 1), layer 1 with 4 experts of width 8
    # and 1 shared of width 8. hidden 16, 2 heads x 8, 1 KV head, vocab 10, untied.
    config = {
        "model_type": "brand_new_moe",
        "hidden_size": 16,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "num_hidden_layers": 2,
        "vocab_size": 10,
        "intermediate_size": 32,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 8,
        "n_shared_experts": 1,
        "first_k_dense_replace": 1,
    }
    spec = parse_hf_config(config)
    # attention per layer: q 16x16 + k 8x16 + v 8x16 + o 16x16 = 768; norms 2 x 16.
    # layer 0 FFN: 3 x 16 x 32 = 1536. layer 1: router 4 x 16 = 64, experts 4 x 3 x 8 x 16
    # = 1536, shared 3 x 8 x 16 = 384. globals: 2 x 10 x 16 + 16 = 336.
    expected = 2 * (768 + 32) + 1536 + 64 + 1536 + 384 + 336
    assert spec.params_total == expected == 5456
    assert spec.params_active == expected - 1536 // 2
    assert spec.is_fallback
    note = next(n for n in spec.notes if "fallback" in n)
    for key in (
        "n_routed_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        "n_shared_experts",
        "first_k_dense_replace",
    ):
        assert key in note


def test_the_generic_fallback_still_needs_some_layer_count() -> None:
    with pytest.raises(ConfigError) as err:
        parse_hf_config({"model_type": "brand_new", "hidden_size": 64})
    assert err.value.field == "num_hidden_layers"


def test_the_generic_fallback_takes_layers_from_a_pattern() -> None:
    spec = parse_hf_config(
        {
            "model_type": "brand_new",
            "hidden_size": 64,
            "num_attention_heads": 4,
            "layer_types": ["sliding_attention", "full_attention"] * 3,
            "sliding_window": 512,
        }
    )
    assert spec.n_layers == 6
    assert [layer.attention for layer in spec.layers[:2]] == ["sliding", "full"]
    assert spec.layers[0].window_tokens == 512
