"""The published data sets and the request every row starts from: the stand-in config of
a data set's model, a device big enough that fit never limits a size or speed row."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from estimator.api import RequestError, estimate
from estimator.calibration import models as calibration_models
from estimator.units import MIB
from estimator.validate.metrics import Metric

DATA = Path(__file__).resolve().parent.parent / "data" / "validation"
BIG_DEVICE_GB = 100_000.0  # memory for speed/size rows, so fit never limits them


def read_csv(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def rebuilt_config(name: str) -> dict[str, Any]:
    """A config.json dict rebuilt from a model_configs.csv row (model.csv_configs)."""
    return calibration_models.rebuilt_config(name)


def config_for(model_name: str) -> str | None:
    """The config.json (as JSON text) standing in for a data set's model name."""
    return calibration_models.config_text(model_name)


def base_request(config_text: str, weights: dict[str, Any], **sections: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": {"hf_config": json.loads(config_text)},
        "weights": weights,
        "device": {"memory_gb": BIG_DEVICE_GB, "bandwidth_gbps": 1000.0},
    }
    request.update(sections)
    return request


def run(metric: Metric, request: dict[str, Any]) -> dict[str, Any] | None:
    """estimate(request), or None after counting the RequestError as a skip reason."""
    try:
        return estimate(request)
    except RequestError as exc:
        metric.skip(f"estimator refused: {exc.field}")
        return None


def mib(text: str) -> float:
    return float(text) * MIB
