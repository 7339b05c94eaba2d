"""GGUF file sizes: weights_bytes against the Hugging Face listings (gguf_sizes.csv) and
the unsloth Dynamic (UD-*) types (gguf_sizes_ud.csv)."""

from __future__ import annotations

import json
from typing import Any

from estimator.calibration import models as calibration_models
from estimator.units import GB
from estimator.validate.data import base_request, config_for, read_csv, rebuilt_config, run
from estimator.validate.metrics import Metric, Target


def gguf_request(row: dict[str, str]) -> tuple[dict[str, Any], float] | str:
    """(request, measured file bytes) for a gguf_sizes.csv row, or why it is left out."""
    config = config_for(row["model"])
    notes = row["notes"]
    if config is None:
        return "no config for the model"
    if "BEFORE the MoE-specific quant rules" in notes:
        return "file predates llama.cpp's MoE quant rules"
    imatrix = "static" not in notes.lower()
    weights = {"format": "gguf", "quant": row["quant"], "imatrix": imatrix}
    return base_request(config, weights), float(row["file_size_gb"]) * GB


def validate_gguf_sizes() -> list[Metric]:
    """weights_bytes of each GGUF file type vs the Hugging Face listing (decimal GB, three
    significant figures, so +-0.5 in the last digit is in the measurement)."""
    metric = Metric("gguf_sizes.csv", "weights_bytes", Target(median_pct=1.0, max_pct=3.0))
    for row in read_csv("gguf_sizes.csv"):
        built = gguf_request(row)
        if isinstance(built, str):
            metric.skip(built)
            continue
        request, measured = built
        result = run(metric, request)
        if result is not None:
            metric.add(result["weights_bytes"], measured)
    return [metric]


def ud_config_text(name: str) -> str:
    """gguf_sizes_ud.csv's `config` column: a config.json stem of CONFIG_DIRS or a
    model_configs.csv row name (rebuilt), as JSON text."""
    path = next(
        (p for d in calibration_models.CONFIG_DIRS if (p := d / f"{name}.json").exists()), None
    )
    if path is not None:
        return path.read_text(encoding="utf-8")
    return json.dumps(rebuilt_config(name))


def validate_gguf_sizes_ud() -> list[Metric]:
    """weights_bytes of the unsloth Dynamic (UD-*) types vs published sizes
    (gguf_sizes_ud.csv): the rows the recipes' scales were fitted on, and the held-out
    rows (older Llama 4 table, 2026 architectures). `basis` tensor_data rows are
    llama.cpp's tensor total (the file adds its few-MB header, inside the estimate)."""
    fit = Metric("gguf_sizes_ud.csv", "weights_bytes (UD, fitted rows)", Target(median_pct=1.0))
    held = Metric("gguf_sizes_ud.csv", "weights_bytes (UD, held-out rows)", Target())
    for row in read_csv("gguf_sizes_ud.csv"):
        metric = fit if row["group"] == "fit" else held
        if row["group"] == "excluded":
            metric.skip(row["notes"].split(";")[0])
            continue
        weights = {"format": "gguf", "quant": row["quant"]}
        result = run(metric, base_request(ud_config_text(row["config"]), weights))
        if result is not None:
            metric.add(result["weights_bytes"], float(row["file_size_gb"]) * GB)
    return [fit, held]
