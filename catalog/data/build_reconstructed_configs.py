"""Rebuild config.json files for catalog models whose verbatim file could not be found.

Reads estimator/data/validation/model_configs.csv (architecture fields transcribed from
each model's official config.json; its `source` column says from where) and writes
configs/reconstructed/<org>__<name>.json with only the keys that determine sizing. The
estimator's parameter counts of these files equal the CSV's `params_total_computed`
(tests/estimator/test_model.py checks the same rebuild).

Run from the repository root: python catalog/data/build_reconstructed_configs.py
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "estimator" / "data" / "validation" / "model_configs.csv"
OUT = Path(__file__).resolve().parent / "configs" / "reconstructed"

# CSV row -> (file stem, model_type, keys the CSV keeps in its notes column)
TARGETS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "Qwen2.5-14B-Instruct": ("Qwen__Qwen2.5-14B-Instruct", "qwen2", {}),
    "Qwen2.5-32B-Instruct": ("Qwen__Qwen2.5-32B-Instruct", "qwen2", {}),
    "Qwen3-4B": ("Qwen__Qwen3-4B", "qwen3", {}),
    "Qwen3-Next-80B-A3B": (
        "Qwen__Qwen3-Next-80B-A3B-Instruct",
        "qwen3_next",
        {"shared_expert_intermediate_size": 512},
    ),
    "Mistral-Small-24B-Instruct-2501": (
        "mistralai__Mistral-Small-24B-Instruct-2501",
        "mistral",
        {"sliding_window": None},
    ),
    "Gemma-2-27B-it": ("google__gemma-2-27b-it", "gemma2", {}),
    "Gemma-3-1B-it": ("google__gemma-3-1b-it", "gemma3_text", {}),
    "Gemma-3-4B-it": ("google__gemma-3-4b-it", "gemma3_text", {}),
    "Gemma-3-12B-it": ("google__gemma-3-12b-it", "gemma3_text", {}),
    "Gemma-3-27B-it": ("google__gemma-3-27b-it", "gemma3_text", {}),
    "Mixtral-8x22B-Instruct-v0.1": ("mistralai__Mixtral-8x22B-Instruct-v0.1", "mixtral", {}),
    "GLM-4.5": ("zai-org__GLM-4.5", "glm4_moe", {"attention_bias": True, "use_qk_norm": True}),
    "GLM-4.5-Air": (
        "zai-org__GLM-4.5-Air",
        "glm4_moe",
        {"attention_bias": True, "use_qk_norm": False},
    ),
}

INT_KEYS = {
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
}
EXPERT_KEYS = {"mixtral": "num_local_experts", "glm4_moe": "n_routed_experts"}


def rebuild(row: dict[str, str], model_type: str, extra: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {"model_type": model_type}
    for column, key in INT_KEYS.items():
        if row[column]:
            config[key] = int(row[column])
    if row["intermediate_size"]:
        config["intermediate_size"] = int(row["intermediate_size"])
    config["tie_word_embeddings"] = row["tie_word_embeddings"] == "true"
    if row["num_experts"]:
        config[EXPERT_KEYS.get(model_type, "num_experts")] = int(row["num_experts"])
    if model_type == "mixtral":
        config["intermediate_size"] = int(row["moe_intermediate_size"])
    config["torch_dtype"] = row["torch_dtype"] or "bfloat16"
    config["_rightsize_reconstructed_from"] = f"model_configs.csv row {row['model']}"
    return config | extra


def main() -> None:
    rows = {row["model"]: row for row in csv.DictReader(CSV.open(encoding="utf-8"))}
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (stem, model_type, extra) in TARGETS.items():
        config = rebuild(rows[name], model_type, extra)
        path = OUT / f"{stem}.json"
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    main()
