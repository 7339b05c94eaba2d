"""Hardware families, weights kinds, the fitted corrections and the per-family ranges of
the one-user speed model (speed.families, speed.corrections, calibration/effects.py)."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.calibration.effects import EFFECT_SHRINK_ROWS, _shrunk_means
from estimator.calibration.rows import prefill_era
from estimator.factors import family_ranges, load_calibration, speed_corrections
from estimator.speed import (
    Device,
    device_class_for,
    device_family,
    family_range,
    is_current,
    speed_multiplier,
    weights_kind,
)
from estimator.speed.corrections import UNCALIBRATED_WIDENING
from estimator.validate.report import format_one_user


@pytest.mark.parametrize(
    ("name", "architecture", "memory_type", "family"),
    [
        ("NVIDIA GeForce RTX 4090", "", "", "nvidia-gddr"),
        ("NVIDIA GeForce RTX 5090", "Blackwell", "GDDR7", "nvidia-gddr"),
        ("NVIDIA GeForce RTX 2080 Ti", "", "", "nvidia-turing"),
        ("Tesla T4", "", "", "nvidia-turing"),
        ("NVIDIA H100 SXM 80GB", "", "", "nvidia-hbm"),
        ("NVIDIA A40", "", "", "nvidia-gddr"),  # GDDR6 despite the datacenter name
        ("NVIDIA GH200 Grace Hopper", "Hopper", "HBM3", "nvidia-hbm"),
        ("NVIDIA DGX Spark (GB10)", "", "", "nvidia-lpddr"),
        ("NVIDIA Tesla V100 SXM2 32GB", "", "", "nvidia-volta"),
        ("NVIDIA GeForce GTX 1080 Ti", "", "", "nvidia-pascal-or-older"),
        ("Apple M1 Max (32-core GPU)", "", "", "apple-m1"),
        ("Apple M2 Ultra (76-core GPU)", "", "", "apple-ultra"),
        ("Apple M4 Pro (20-core GPU)", "", "", "apple"),
        ("AMD Radeon RX 7900 XTX", "", "", "amd-rdna"),
        ("AMD Ryzen AI Max+ 395 (Strix Halo)", "", "", "amd-apu"),
        ("AMD Instinct MI300X", "", "", "amd-cdna"),
        ("AMD Radeon Instinct MI50/MI60 (gfx906)", "", "", "amd-gcn"),
        ("AMD Instinct MI250X", "CDNA 2", "HBM2e", "amd-cdna"),
        ("Intel Arc B580", "", "", "intel-arc"),
        ("Huawei Ascend 910B", "", "", "other"),
    ],
)
def test_a_device_belongs_to_its_memory_technology_and_generation(
    name: str, architecture: str, memory_type: str, family: str
) -> None:
    assert device_family(name, architecture, memory_type) == family


def test_older_and_rare_families_are_not_current_hardware() -> None:
    assert is_current("nvidia-turing") and is_current("intel-arc") and is_current("apple-m1")
    for family in ("nvidia-pascal-or-older", "nvidia-volta", "amd-gcn", "other"):
        assert not is_current(family)


def test_the_memory_type_decides_the_device_class_before_the_bandwidth() -> None:
    # a nameless 1,792 GB/s card with 96 GB is HBM-class by bandwidth and size alone ...
    assert device_class_for("", 1792, memory_gb=96) == "datacenter"
    # ... but GDDR7 memory makes it a consumer-class card, and HBM3 a datacenter one
    assert device_class_for("", 1792, memory_gb=96, memory_type="GDDR7") == "consumer"
    assert device_class_for("", 1000, memory_gb=24, memory_type="HBM3") == "datacenter"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Q4_0", "q4_0"),
        ("Q4_0_4_8", "q4_0"),
        ("Q4_K_M", "k"),
        ("UD-Q4_K_XL", "k"),
        ("Q8_0", "q8"),
        ("UD-Q8_K_XL", "q8"),
        ("F16", "f16"),
        ("bf16", "bf16"),
        ("MXFP4 (MoE)", "mxfp4"),
        ("IQ4_XS", "iq"),
        ("MLX 4-bit", "other"),
    ],
)
def test_a_weights_type_falls_in_its_decoding_work_kind(name: str, kind: str) -> None:
    assert weights_kind(name) == kind


def test_a_prefill_row_is_of_todays_builds_by_its_flash_attention_flag_else_its_date() -> None:
    assert prefill_era("2024-05", "llama-bench defaults (FA off)") == "legacy"
    assert prefill_era("2024-07", "-fa 1, MMQ") == "current"
    assert prefill_era("2025-03", "") == "current"
    assert prefill_era("2024-11", "") == "legacy"


def test_the_multiplier_is_the_exponent_of_the_fitted_effects() -> None:
    effects = speed_corrections("decode")
    device = Device(1008, 165, family="nvidia-gddr", vendor="nvidia")
    expected = math.exp(
        effects["family"]["nvidia-gddr"]
        + effects["kind"].get("cuda/k", 0.0)
        + effects["vendor"].get("nvidia/cuda", 0.0)
    )
    assert speed_multiplier("decode", "llama.cpp", "cuda", device, "Q4_K_M") == pytest.approx(
        expected
    )
    # serving engines and older hardware take none (the effects are fitted on the local
    # engines' rows); a hand-made device without a family neither
    assert speed_multiplier("decode", "vllm", "cuda", device, "Q4_K_M") == 1.0
    old = Device(484, 11, family="nvidia-pascal-or-older", vendor="nvidia")
    assert speed_multiplier("decode", "llama.cpp", "cuda", old, "Q4_K_M") == 1.0
    assert speed_multiplier("decode", "llama.cpp", "cuda", Device(1008, 165), "Q4_K_M") == 1.0


def test_a_family_range_is_its_own_and_a_family_without_rows_is_wider() -> None:
    ranges = family_ranges("decode")
    gddr = family_range("decode", Device(1008, family="nvidia-gddr"), "llama.cpp")
    assert gddr is not None and gddr.calibrated and gddr.rows == ranges["nvidia-gddr"]["rows"]
    assert (gddr.ratio_low, gddr.ratio_high) == (
        ranges["nvidia-gddr"]["ratio_low"],
        ranges["nvidia-gddr"]["ratio_high"],
    )
    # a current family without measurements: the current pool, 25 % further out each way
    unknown = family_range("decode", Device(500, family="made-up-family"), "llama.cpp")
    pool = ranges["current"]
    assert unknown is not None and not unknown.calibrated and unknown.rows == 0
    assert unknown.ratio_low == pytest.approx(pool["ratio_low"] / UNCALIBRATED_WIDENING)
    assert unknown.ratio_high == pytest.approx(pool["ratio_high"] * UNCALIBRATED_WIDENING)
    # the dense NVIDIA family's range is narrower than the pooled one widened
    assert gddr.ratio_high / gddr.ratio_low < unknown.ratio_high / unknown.ratio_low
    assert (
        family_range("decode", Device(1008), "llama.cpp") is None
    )  # no family: the group's bounds


def test_calibration_json_carries_the_one_user_headline_for_both_hardware_groups() -> None:
    holdout = load_calibration()["hardware_holdout"]
    assert holdout["current"]["decode"]["devices"] >= 60
    assert holdout["older_or_rare"]["decode"]["devices"] == 4  # V100, MI50, 2 Pascal cards
    lines = list(format_one_user(load_calibration()))
    assert any(line.startswith("decode    current hardware") for line in lines)
    assert any(line.startswith("prefill   older or rare hardware") for line in lines)


@given(
    st.lists(st.floats(min_value=-2.0, max_value=2.0), min_size=4, max_size=40),
)
def test_a_shrunk_effect_lies_between_no_correction_and_the_rows_median(
    values: list[float],
) -> None:
    effect = _shrunk_means([("g", v, f"d{i}") for i, v in enumerate(values)], 4, 2)["g"]
    median = statistics.median(values)
    assert min(0.0, median) - 1e-4 <= effect <= max(0.0, median) + 1e-4
    # n / (n + k) of the median: more rows, less shrinkage
    n = len(values)
    assert effect == pytest.approx(median * n / (n + EFFECT_SHRINK_ROWS), abs=1e-4)


def test_a_family_with_too_few_rows_or_one_device_has_no_effect() -> None:
    assert _shrunk_means([("g", 0.5, "d1")] * 10, 4, 2) == {}  # one device
    assert _shrunk_means([("g", 0.5, "d1"), ("g", 0.5, "d2")], 4, 2) == {}  # two rows
