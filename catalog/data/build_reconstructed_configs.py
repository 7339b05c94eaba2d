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

from estimator.model.csv_configs import rebuilt_config

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "estimator" / "data" / "validation" / "model_configs.csv"
OUT = Path(__file__).resolve().parent / "configs" / "reconstructed"

# CSV row -> file stem (model_type and extra keys: estimator.model.csv_configs.CSV_REBUILDS)
TARGETS: dict[str, str] = {
    "Qwen2.5-14B-Instruct": "Qwen__Qwen2.5-14B-Instruct",
    "Qwen2.5-32B-Instruct": "Qwen__Qwen2.5-32B-Instruct",
    "Qwen3-4B": "Qwen__Qwen3-4B",
    "Qwen3-Next-80B-A3B": "Qwen__Qwen3-Next-80B-A3B-Instruct",
    "Mistral-Small-24B-Instruct-2501": "mistralai__Mistral-Small-24B-Instruct-2501",
    "Gemma-2-27B-it": "google__gemma-2-27b-it",
    "Gemma-3-1B-it": "google__gemma-3-1b-it",
    "Gemma-3-4B-it": "google__gemma-3-4b-it",
    "Gemma-3-12B-it": "google__gemma-3-12b-it",
    "Gemma-3-27B-it": "google__gemma-3-27b-it",
    "Mixtral-8x22B-Instruct-v0.1": "mistralai__Mixtral-8x22B-Instruct-v0.1",
    "GLM-4.5": "zai-org__GLM-4.5",
    "GLM-4.5-Air": "zai-org__GLM-4.5-Air",
}


def rebuild(row: dict[str, str]) -> dict[str, Any]:
    config = rebuilt_config(row)
    config["torch_dtype"] = row["torch_dtype"] or "bfloat16"
    config["_rightsize_reconstructed_from"] = f"model_configs.csv row {row['model']}"
    return config


def main() -> None:
    rows = {row["model"]: row for row in csv.DictReader(CSV.open(encoding="utf-8"))}
    OUT.mkdir(parents=True, exist_ok=True)
    for name, stem in TARGETS.items():
        config = rebuild(rows[name])
        path = OUT / f"{stem}.json"
        path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    main()
