"""Imputed FP16 rates (estimator.speed.compute_rates) and what the estimate says about a
device whose FP16 rate is imputed or unknown (estimator.api.compute_rate)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from estimator import speed
from estimator.api import estimate, parse_request, request_to_dict
from estimator.api.compute_rate import DECODE_COMPUTE_UNKNOWN
from estimator.speed.compute_rates import (
    UNITS_CSV,
    VENDOR_UNITS,
    catalog_rate,
    impute,
)


def imputed(*args: Any, **kwargs: Any) -> tuple[float, str]:
    """(TFLOPS, explanation) of impute(...), (0, "") when it imputes nothing."""
    rate = impute(*args, **kwargs)
    return (rate.tflops, rate.explanation) if rate else (0.0, "")


ROOT = Path(__file__).resolve().parents[2]
LLAMA_8B = json.loads(
    (ROOT / "estimator/data/validation/configs/meta-llama__Llama-3.1-8B-Instruct.json").read_text()
)


def test_an_m2_max_38_core_gives_13_6_tflops() -> None:
    # 38 GPU cores x 128 FP32 ALUs x 2 FLOP (FMA) x 1.398 GHz = 13,599.7 GFLOPS = 13.6 TFLOPS
    # (Apple GPUs run FP16 at the FP32 rate; philipturner/metal-benchmarks lists 13,600)
    tflops, explanation = imputed("Apple", "Apple M2", 38, 1398)
    assert tflops == pytest.approx(38 * 128 * 2 * 1.398e9 / 1e12) == pytest.approx(13.6, abs=0.01)
    assert explanation.startswith("38 GPU cores x 128 ALUs x 2 FLOP (FMA) x 1.398 GHz = 13.6")
    # the same figure estimator/data/calibration_devices.csv holds for this chip
    assert round(tflops, 1) == 13.6


def test_a_geforce_rtx_3090_gives_the_whitepapers_71_tflops() -> None:
    # 82 SMs x 4 tensor cores x 128 dense FP16 FMA x 2 FLOP = 1024 FLOP per SM per clock,
    # halved for GeForce FP32 accumulate = 512; x 1.695 GHz = 71.16 TFLOPS (GA102
    # whitepaper: 71 with FP32 accumulate)
    tflops, explanation = imputed(
        "NVIDIA", "Ampere", 82, 1695, name="GeForce RTX 3090", chip="GA102"
    )
    assert tflops == pytest.approx(82 * 512 * 1.695e9 / 1e12) == pytest.approx(71.16, abs=0.01)
    assert explanation.startswith("82 SMs x 512 FLOP/clock x 1.695 GHz = 71.2 TFLOPS")


@pytest.mark.parametrize(
    ("vendor", "architecture", "units", "mhz", "name", "chip", "expected"),
    [
        # RTX A6000, GA102 at the full professional rate: 84 x 1024 x 1.8 GHz = 154.8
        ("NVIDIA", "Ampere", 84, 1800, "RTX A6000", "GA102", 154.8),
        # A100, GA100: 108 SMs x 2048 x 1.41 GHz = 311.9 (whitepaper: 312)
        ("NVIDIA", "Ampere", 108, 1410, "A100 SXM4 80 GB", "GA100", 311.9),
        # RTX 2080 Ti reference: 68 x 512 x 1.545 GHz = 53.8 (Turing whitepaper: 53.8)
        ("NVIDIA", "Turing", 68, 1545, "GeForce RTX 2080 Ti", "TU102", 53.8),
        # RTX 4090: 128 x 512 x 2.52 GHz = 165.2 (Ada whitepaper: 165.2)
        ("NVIDIA", "Ada Lovelace", 128, 2520, "GeForce RTX 4090", "AD102", 165.2),
        # MI300X: 304 CUs x 2048 x 2.1 GHz = 1307.4 (ROCm MI300 page: 1307.4)
        ("AMD", "CDNA 3", 304, 2100, "Instinct MI300X", "", 1307.4),
        # RX 7900 XTX: 96 CUs x 512 x 2.5 GHz = 122.9 (AMD: 122.8)
        ("AMD", "RDNA 3", 96, 2500, "Radeon RX 7900 XTX", "", 122.9),
        # Arc A770: 32 Xe-cores x 2048 x 2.1 GHz = 137.6
        ("Intel", "Xe-HPG", 32, 2100, "Arc A770", "", 137.6),
    ],
)
def test_it_gives_each_architectures_published_peak(
    vendor: str, architecture: str, units: int, mhz: float, name: str, chip: str, expected: float
) -> None:
    rate = impute(vendor, architecture, units, mhz, name=name, chip=chip)
    assert rate is not None
    assert rate.tflops == pytest.approx(units * rate.flop_per_unit_clock * mhz / 1e6)
    assert rate.tflops == pytest.approx(expected, abs=0.05)


@pytest.mark.parametrize(
    ("vendor", "architecture", "name", "chip"),
    [
        ("NVIDIA", "Pascal", "GeForce GTX 1080 Ti", "GP102"),  # no tensor cores
        ("NVIDIA", "Turing", "GeForce GTX 1660 Ti", "TU116"),  # Turing without tensor cores
        ("NVIDIA", "Blackwell", "B200", "GB100"),  # datacenter Blackwell: not sourced here
        ("NVIDIA", "Blackwell", "GB10", "GB20B"),  # the DGX Spark SoC
        ("NVIDIA", "Ada Lovelace", "L20", "AD102"),  # China-market part, capped rate
        ("NVIDIA", "Blackwell", "GeForce RTX 5090 D", "GB202"),  # capped too
        ("AMD", "GCN 5", "Radeon Instinct MI50", ""),
        ("AMD", "RDNA 4", "Radeon RX 9070 XT", ""),
        ("Intel", "Xe2", "Arc B580", ""),
        ("Apple", "Apple M5", "MacBook Pro M5", ""),  # GPU neural accelerators: not FP32-rate
        ("Moore Threads", "MUSA", "MTT S4000", ""),
    ],
)
def test_it_imputes_nothing_without_a_sourced_rate(
    vendor: str, architecture: str, name: str, chip: str
) -> None:
    assert impute(vendor, architecture, 80, 1500, name=name, chip=chip) is None


def test_every_table_row_is_sourced_and_imputable() -> None:
    with UNITS_CSV.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    catalog = {
        a["name"]: a for a in json.loads((ROOT / "catalog/data/accelerators.json").read_text())
    }
    assert len(rows) == 10
    for row in rows:
        card = catalog[row["name"]]  # a catalog card ...
        assert not card.get("fp16_tflops"), row["name"]  # ... that publishes no rate
        assert row["unit_kind"] == VENDOR_UNITS[row["vendor"].lower()]
        assert len(row["source"]) > 40, row["name"]
        rate = catalog_rate(row["vendor"], row["name"])
        assert rate is not None and rate.source == row["source"]


def test_the_catalog_rows_give_the_worked_figures() -> None:
    # Mac Studio M4 Max 32-core: 32 x 256 x 1.797 GHz = 14.72 TFLOPS, the 14.7 that
    # estimator/data/calibration_devices.csv already holds for this bin
    m4_max = catalog_rate("Apple", "Mac Studio M4 Max (32-core GPU, 36GB)")
    assert m4_max is not None and m4_max.tflops == pytest.approx(14.72, abs=0.005)
    # M3 Ultra 80-core: 80 x 256 x 1.38 GHz = 28.26 TFLOPS
    m3_ultra = catalog_rate("Apple", "Mac Studio M3 Ultra (80-core GPU, 512GB)")
    assert m3_ultra is not None and m3_ultra.tflops == pytest.approx(28.26, abs=0.005)
    # MacBook Air M4 base: 8 cores x 256 x 1.797 GHz = 3.68 TFLOPS
    air = catalog_rate("Apple", "MacBook Air M4 (13-inch, 16GB)")
    assert air is not None and air.units == 8 and air.tflops == pytest.approx(3.68, abs=0.005)
    # Max 1550, both stacks: 128 Xe-cores x 4096 x 1.6 GHz = 838.9 TFLOPS
    pvc = catalog_rate("Intel", "Data Center GPU Max 1550")
    assert pvc is not None and pvc.tflops == pytest.approx(838.86, abs=0.01)
    assert catalog_rate("AMD", "Instinct MI308X") is None  # no source for units and clock


def test_an_imputed_rate_adds_the_compute_term_a_missing_one_left_out() -> None:
    """Before, an Apple device without fp16_tflops got 0 compute time per step; with the
    imputed 14.72 TFLOPS the step carries 2 x params x batch / (TFLOPS x decode_mfu)."""
    work = speed.DecodeWork(weight_bytes_per_token=4.9e9, params_active=8.03e9, n_layers=32)
    factors = speed.resolve_factors("llama.cpp", "metal", "consumer", False)
    without = speed.Device(bandwidth_gbps=410, architecture="Apple M4")
    with_rate = speed.Device(bandwidth_gbps=410, fp16_tflops=14.72, architecture="Apple M4")
    par = speed.Parallelism()
    assert speed.compute_seconds_per_step(work, without, par, factors.decode_mfu, 8) == 0.0
    compute = speed.compute_seconds_per_step(work, with_rate, par, factors.decode_mfu, 8)
    # 2 x 8.03e9 x 8 sequences / (14.72e12 x decode_mfu)
    assert compute == pytest.approx(2 * 8.03e9 * 8 / (14.72e12 * factors.decode_mfu))
    assert compute > 0
    slow, _ = speed.decode_step_seconds(work, with_rate, factors, batch=8)
    fast, _ = speed.decode_step_seconds(work, without, factors, batch=8)
    assert slow - fast == pytest.approx(compute)


def request(device: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": {"hf_config": LLAMA_8B},
        "weights": {"format": "gguf", "quant": "Q4_K_M"},
        "device": {"memory_gb": 36, "bandwidth_gbps": 410, "vendor": "apple", **device},
        "engine": {"name": "llama.cpp", "backend": "metal"},
        "workload": {"context_tokens": 8192},
    }


def test_the_result_says_when_the_compute_term_is_unknown() -> None:
    result = estimate(request({}))
    assert result["compute_rate"] == {
        "fp16_tflops": None,
        "imputed": False,
        "imputed_from": None,
        "decode_compute": "unknown",
    }
    assert DECODE_COMPUTE_UNKNOWN in result["warnings"]
    assert result["prefill_tokens_per_s"] is None


def test_the_result_carries_an_imputed_rate_and_its_arithmetic() -> None:
    basis = "32 GPU cores x 128 ALUs x 2 FLOP (FMA) x 1.797 GHz = 14.7 TFLOPS"
    device = {"fp16_tflops": 14.72, "fp16_imputed": True, "fp16_imputed_from": basis}
    result = estimate(request(device))
    assert result["compute_rate"] == {
        "fp16_tflops": 14.72,
        "imputed": True,
        "imputed_from": basis,
        "decode_compute": "included",
    }
    assert f"device.fp16_tflops imputed (no published rate): {basis}" in result["notes"]
    assert DECODE_COMPUTE_UNKNOWN not in result["warnings"]
    assert result["prefill_tokens_per_s"] is not None
    # the flag survives the JSON round trip of the request
    parsed = parse_request(request(device))
    assert parse_request(request_to_dict(parsed)) == parsed
    assert request_to_dict(parsed)["device"]["fp16_imputed"] is True


def test_a_published_rate_adds_nothing_to_the_json() -> None:
    parsed = parse_request(request({"fp16_tflops": 14.72}))
    assert "compute_rate" not in estimate(request({"fp16_tflops": 14.72}))
    assert "fp16_imputed" not in request_to_dict(parsed)["device"]
