"""Worked examples for the hybrid, sparse and generic parsers (layer specs, states, keys)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from estimator.kv import kv_bytes_per_token
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


def test_it_reads_the_original_hunyuan_a13b_release_config() -> None:
    # Remote-code keys: attention_head_dim 128, per-layer moe_topk / moe_intermediate_size /
    # num_shared_expert lists, use_mixed_mlp_moe true, use_cla false.
    # Per layer: attention q 4096x4096 + k, v 1024x4096 + o 4096x4096 = 41,943,040, QK-norm
    # 2 x 128; router 64 x 4096 = 262,144; experts 64 x 3 x 3072 x 4096 = 2,415,919,104;
    # shared 3 x 3072 x 4096 = 37,748,736; norms 2 x 4096. 32 layers x 2,495,881,472
    # + tied embedding 128167 x 4096 = 524,972,032 + output_norm 4096 = 80,393,183,232.
    # Active: minus 56/64 of the experts = 12,747,448,320 (12.22B without embeddings).
    config = load("tencent__Hunyuan-A13B-Instruct")
    assert config["model_type"] == "hunyuan"
    spec = parse_hf_config(config)
    assert not spec.is_fallback and spec.gguf_arch == "hunyuan-moe"
    assert spec.params_total == 80_393_183_232
    assert spec.params_active == 12_747_448_320
    assert (spec.n_experts, spec.n_experts_per_token, spec.n_shared_experts) == (64, 8, 1)
    # Published: "a total of 80 billion parameters with 13 billion active parameters"
    # (github Tencent-Hunyuan/Hunyuan-A13B README.md, Model Introduction; copy at
    # tianyu1412/Hunyuan-A13B @ 2798f3c8).
    assert abs(spec.params_total / 80e9 - 1) <= 0.01
    assert abs(spec.params_active / 13e9 - 1) <= 0.02
    # No CLA: 32 layers x 2 (K, V) x 8 heads x 128 x 2 B (f16) = 131,072 B per token.
    assert kv_bytes_per_token(spec) == 131_072
    assert spec.max_context_tokens == 32_768  # config.json as released; card says 256K


def test_hunyuan_cla_layers_reuse_kv_and_cache_nothing() -> None:
    # 4 layers, cla_share_factor 2: layers 1 and 3 reuse K/V of layers 0 and 2.
    # hidden 16, 2 heads x 8, 1 KV head; 4 experts of width 8, 1 shared; vocab 10, tied.
    config = {
        "model_type": "hunyuan",
        "hidden_size": 16,
        "intermediate_size": 8,
        "num_hidden_layers": 4,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "attention_head_dim": 8,
        "vocab_size": 10,
        "num_experts": 4,
        "moe_topk": 2,
        "moe_intermediate_size": 8,
        "num_shared_expert": 1,
        "use_mixed_mlp_moe": True,
        "use_qk_norm": True,
        "use_cla": True,
        "cla_share_factor": 2,
        "tie_word_embeddings": True,
    }
    spec = parse_hf_config(config)
    names = {t.name for t in spec.tensors}
    assert {"blk.0.attn_k", "blk.0.attn_v", "blk.2.attn_k", "blk.2.attn_v"} <= names
    assert not {"blk.1.attn_k", "blk.1.attn_v", "blk.3.attn_k", "blk.3.attn_v"} & names
    assert "blk.1.attn_q" in names and "blk.1.attn_output" in names
    assert [layer.n_kv_heads for layer in spec.layers] == [1, 0, 1, 0]
    assert spec.layers[1].attention == "linear" and spec.layers[1].linear_state_bytes_per_seq == 0
    # Two caching layers x 2 (K, V) x 1 head x 8 x 2 B = 64 B per token (128 without CLA).
    assert kv_bytes_per_token(spec) == 64
    # attention: self layers q 16x16 + k, v 8x16 + o 16x16 = 768, cross layers 512; QK-norm
    # 2 x 8. FFN: router 4 x 16 + experts 4 x 3 x 8 x 16 + shared 3 x 8 x 16 = 1,984.
    # norms 2 x 16. 2 x 768 + 2 x 512 + 4 x (16 + 1,984 + 32) + 160 + 16 = 10,864.
    assert spec.params_total == 10_864


def test_hunyuan_without_mixed_mlp_has_no_shared_expert() -> None:
    spec = parse_hf_config({**HUNYUAN_A13B, "model_type": "hunyuan", "use_mixed_mlp_moe": False})
    assert not any(t.kind == "shared_expert" for t in spec.tensors)
    assert spec.n_shared_experts == 0


def test_it_splits_minimax_m1_into_lightning_and_softmax_layers() -> None:
    config = load("MiniMaxAI__MiniMax-M1-80k")
    spec = parse_hf_config(config)
    assert not spec.is_fallback and spec.gguf_arch == "minimax-01"
    softmax = [layer.index for layer in spec.layers if layer.attention == "full"]
    lightning = [layer for layer in spec.layers if layer.attention == "linear"]
    assert softmax == [i for i, code in enumerate(config["attn_type_list"]) if code == 1]
    assert softmax == list(range(7, 80, 8)) and len(lightning) == 70
    # Lightning state: 64 heads x 128 x 128 x 4 B (f32 kv matrix) = 4,194,304 B per layer.
    assert {layer.linear_state_bytes_per_seq for layer in lightning} == {4_194_304}
    # Only the 10 softmax layers cache per token: 10 x 2 x 8 heads x 128 x 2 B = 40,960 B
    # (the generic fallback sized all 80 layers: 327,680 B).
    assert kv_bytes_per_token(spec) == 40_960
    # config.json as released (the README says 1M-token context natively): taken as given.
    assert spec.max_context_tokens == 10_240_000


def test_minimax_m1_matches_its_published_and_checkpoint_sizes() -> None:
    # Lightning layer: qkv 3 x 8192 x 6144 + output_gate 8192 x 6144 + out_proj 6144 x 8192
    # + norm 8192 = 251,666,432. Softmax layer: q 8192 x 6144 + k, v 1024 x 6144 + o
    # = 113,246,208. MoE layer: router 32 x 6144 + 32 experts x 3 x 9216 x 6144
    # = 5,436,014,592; norms 2 x 6144. 70 x 251,666,432 + 10 x 113,246,208
    # + 80 x 5,436,026,880 + 2 x 200064 x 6144 (untied) + 6144 = 456,089,655,296.
    spec = parse_hf_config(load("MiniMaxAI__MiniMax-M1-80k"))
    assert spec.params_total == 456_089_655_296
    # The checkpoint index (github MiniMax-AI/MiniMax-M1 model.safetensors.index.json,
    # total_size 912,210,767,872 B in bf16) holds 456,105,383,936 elements' worth: the
    # 15,728,640 gap is 80 x 32 x 6144, one router per layer, as if stored in f32.
    assert 912_210_767_872 // 2 - spec.params_total == 80 * 32 * 6144
    # Published: "456 billion parameters with 45.9 billion parameters activated per token"
    # (MiniMax-M1 README, Model Overview; arXiv 2506.13585). 45.9B matches the count
    # without embeddings: 48,403,306,496 - 2 x 1,229,193,216 = 45,944,920,064.
    assert abs(spec.params_total / 456e9 - 1) <= 0.01
    active = spec.params_active - spec.params_embedding
    assert active == 45_944_920_064
    assert abs(active / 45.9e9 - 1) <= 0.01


def test_minimax_m1_needs_one_attention_type_per_layer() -> None:
    config = {**load("MiniMaxAI__MiniMax-M1-80k"), "attn_type_list": [0, 1]}
    with pytest.raises(ConfigError) as err:
        parse_hf_config(config)
    assert err.value.field == "attn_type_list"
