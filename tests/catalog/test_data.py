"""The seed files: every curated figure carries its source (no database needed)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "catalog" / "data"
ACCELERATOR_FIGURES = (
    "memory_gb",
    "bandwidth_gbps",
    "fp16_tflops",
    "fp8_tflops",
    "int8_tops",
    "tdp_w",
    "interconnect_gbps",
    "release_date",
    "price_usd",
)
MODEL_FIGURES = (
    "release_date",
    "training_compute_flop",
    "params_total_published",
    "params_active_published",
    "max_context_tokens",
)


def _unsourced(rows: list[dict[str, object]], figures: tuple[str, ...]) -> list[str]:
    return [
        f"{row['slug']}.{name}"
        for row in rows
        for name in figures
        if row.get(name) is not None and name not in (row.get("sources") or {})  # type: ignore[operator]
    ]


def test_every_curated_accelerator_figure_has_a_source() -> None:
    rows = json.loads((DATA / "accelerators.json").read_text())
    assert _unsourced(rows, ACCELERATOR_FIGURES) == []


@pytest.mark.parametrize("path", sorted(DATA.glob("models*.json")), ids=lambda p: p.name)
def test_every_model_figure_has_a_source(path: Path) -> None:
    assert _unsourced(json.loads(path.read_text()), MODEL_FIGURES) == []


@pytest.mark.parametrize("path", sorted(DATA.glob("model_weights*.csv")), ids=lambda p: p.name)
def test_every_measured_file_size_has_a_source(path: Path) -> None:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["model_slug"] for r in rows if r["file_bytes"] and not r["source"].strip()] == []


def test_every_quant_format_has_a_source() -> None:
    with (DATA / "quant_formats.csv").open(newline="") as fh:
        assert all(row["source"] for row in csv.DictReader(fh))
