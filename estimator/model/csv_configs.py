"""config.json dicts rebuilt from the architecture columns of model_configs.csv.

The validation data set transcribes each model's official config.json into one CSV row
(layers, widths, heads, experts, ...). Where no verbatim config.json is at hand, the
estimator, its tests and the catalog rebuild one from that row with `config_from_csv_row`,
adding the few keys the CSV keeps only in its notes column via `extra`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# CSV column -> config.json key (integers; empty cells are left out).
CSV_KEYS = {
    "num_hidden_layers": "num_hidden_layers",
    "hidden_size": "hidden_size",
    "num_attention_heads": "num_attention_heads",
    "num_key_value_heads": "num_key_value_heads",
    "head_dim": "head_dim",
    "vocab_size": "vocab_size",
    "max_position_embeddings": "max_position_embeddings",
    "moe_intermediate_size": "moe_intermediate_size",
    "sliding_window": "sliding_window",
    "experts_per_token": "num_experts_per_tok",
    "shared_experts": "n_shared_experts",
    "first_k_dense_replace": "first_k_dense_replace",
    "intermediate_size": "intermediate_size",
}
# How each architecture's config names its routed-expert count.
EXPERT_KEYS = {
    "mixtral": "num_local_experts",
    "llama4_text": "num_local_experts",
    "glm4_moe": "n_routed_experts",
}


def config_from_csv_row(
    row: Mapping[str, str], model_type: str, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A config.json dict for `model_type` from one model_configs.csv row, plus `extra`.

    Mixtral keeps its expert width in `intermediate_size` (the CSV's moe column); Llama 4
    names the dense MLP width `intermediate_size_mlp` and the expert width
    `intermediate_size` (transformers' MixtralConfig / Llama4TextConfig).
    """
    config: dict[str, Any] = {"model_type": model_type}
    for column, key in CSV_KEYS.items():
        if row.get(column):
            config[key] = int(row[column])
    config["tie_word_embeddings"] = row.get("tie_word_embeddings") == "true"
    if row.get("num_experts"):
        config[EXPERT_KEYS.get(model_type, "num_experts")] = int(row["num_experts"])
    if model_type == "mixtral":
        config["intermediate_size"] = int(row["moe_intermediate_size"])
    if model_type == "llama4_text":
        config["intermediate_size_mlp"] = int(row["intermediate_size"])
        config["intermediate_size"] = int(row["moe_intermediate_size"])
    return config | dict(extra or {})


# model_configs.csv rows without a verbatim config.json: model_type and the keys the CSV
# gives only in words in its notes column.
CSV_REBUILDS: dict[str, tuple[str, dict[str, Any]]] = {
    "Llama-3.1-405B": ("llama", {}),
    "Llama-3.2-1B": ("llama", {}),
    "Qwen2.5-14B-Instruct": ("qwen2", {}),
    "Qwen2.5-32B-Instruct": ("qwen2", {}),
    "Qwen3-1.7B": ("qwen3", {}),
    "Qwen3-4B": ("qwen3", {}),
    "Qwen3-14B": ("qwen3", {}),
    "Mistral-Small-24B-Instruct-2501": ("mistral", {"sliding_window": None}),
    "Gemma-2-27B-it": ("gemma2", {}),
    "Gemma-3-1B-it": ("gemma3_text", {}),
    "Gemma-3-4B-it": ("gemma3_text", {}),
    "Gemma-3-12B-it": ("gemma3_text", {}),
    "Gemma-3-27B-it": ("gemma3_text", {}),
    "Mixtral-8x22B-Instruct-v0.1": ("mixtral", {}),
    # notes: "attention_bias true", "use_qk_norm true" (4.5) / "false" (Air)
    "GLM-4.5": ("glm4_moe", {"attention_bias": True, "use_qk_norm": True}),
    "GLM-4.5-Air": ("glm4_moe", {"attention_bias": True, "use_qk_norm": False}),
    # notes: Scout interleave_moe_layer_step 1, Maverick 2 with intermediate_size_mlp 16384
    "Llama-4-Scout-17B-16E": ("llama4_text", {"interleave_moe_layer_step": 1}),
    "Llama-4-Maverick-17B-128E": ("llama4_text", {"interleave_moe_layer_step": 2}),
    "Qwen3-Next-80B-A3B": ("qwen3_next", {"shared_expert_intermediate_size": 512}),
}


def rebuilt_config(row: Mapping[str, str]) -> dict[str, Any]:
    """config_from_csv_row with the model_type and extras CSV_REBUILDS holds for the row."""
    model_type, extra = CSV_REBUILDS[row["model"]]
    return config_from_csv_row(row, model_type, extra)
