"""A speed is calibrated only where published measurements of its engine, on its backend,
on its vendor's hardware back it (speed.measured_group, calibration.json
"measured_vendors") and the device's hardware family has measurements of its own
(speed.family_range): llama.cpp's Vulkan group holds AMD, Intel and NVIDIA rows, none of
other vendors."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from estimator import speed
from estimator.api import Device, parse_request, run_estimate
from estimator.api.sweep import sweep
from estimator.calibration.build import group_key
from estimator.calibration.rows import device_vendor, load_measurements, measured_vendors
from estimator.factors import load_calibration

CONFIG = json.loads(
    (
        Path(__file__).resolve().parents[2]
        / "estimator/data/validation/configs"
        / "meta-llama__Llama-3.1-8B-Instruct.json"
    ).read_text()
)
# Intel Arc A770 16GB: 16 GB GDDR6 at 560 GB/s (catalog/data/accelerators.json, from
# https://www.techpowerup.com/gpu-specs/arc-a770.c3914); no FP16 TFLOPS in the catalog.
A770 = {"memory_gb": 16, "bandwidth_gbps": 560, "vendor": "intel", "name": "Arc A770 16GB"}
# GeForce RTX 4090: 24 GB at 1008 GB/s (the same catalog).
# A card of a vendor no published measurement covers (figures of a 16 GB GDDR6 card; only
# the vendor matters here).
OTHER = {"memory_gb": 16, "bandwidth_gbps": 448, "vendor": "other", "name": "Other GPU 16GB"}
RTX_4090 = {"memory_gb": 24, "bandwidth_gbps": 1008, "vendor": "nvidia", "name": "RTX 4090"}


def request(device: dict[str, object], engine: str, backend: str) -> dict[str, object]:
    return {
        "model": {"hf_config": CONFIG},
        "weights": {"format": "gguf", "quant": "Q4_K_M"},
        "engine": {"name": engine, "backend": backend},
        "device": device,
        "workload": {"context_tokens": 8192},
    }


def test_the_vulkan_group_backs_amd_intel_and_nvidia_cards_but_no_other_vendors() -> None:
    assert speed.measured_group("llama.cpp", "vulkan", "consumer", vendor="amd")
    assert speed.measured_group("llama.cpp", "vulkan", "consumer", vendor="nvidia")
    # Intel Arc A770 / B580 / 140V rows from llama.cpp pull requests and public benches
    assert speed.measured_group("llama.cpp", "vulkan", "consumer", vendor="intel")
    assert speed.measured_group("ollama", "vulkan", "consumer", vendor="intel")
    assert not speed.measured_group("llama.cpp", "vulkan", "consumer", vendor="other")
    # SYCL has its own group now, measured on Intel cards only
    assert speed.measured_group("llama.cpp", "sycl", "consumer", vendor="intel")
    assert not speed.measured_group("llama.cpp", "sycl", "consumer", vendor="nvidia")


def test_a_backend_group_backs_only_the_vendors_it_was_measured_on() -> None:
    # ROCm rows are all AMD: another vendor on ROCm (a Hygon DCU) is not backed.
    assert speed.measured_group("llama.cpp", "rocm", "consumer", vendor="amd")
    assert not speed.measured_group("llama.cpp", "rocm", "consumer", vendor="other")
    assert speed.measured_group("llama.cpp", "cuda", "consumer", vendor="nvidia")
    assert speed.measured_group("llama.cpp", "metal", "consumer", vendor="apple")


def test_an_arc_a770_on_ollama_vulkan_is_calibrated_and_names_its_family() -> None:
    result = run_estimate(parse_request(request(A770, "ollama", "vulkan")))
    assert result.speed_calibrated is True
    family = result.speed_family
    assert family is not None and family["family"] == "intel-arc" and family["calibrated"]
    assert family["decode_measurements"] >= 10 and family["current_hardware"]


def test_another_vendors_card_on_vulkan_is_uncalibrated_and_says_why() -> None:
    result = run_estimate(parse_request(request(OTHER, "llama.cpp", "vulkan")))
    assert result.speed_calibrated is False
    assert any(
        "llama.cpp on vulkan with other hardware" in w and "amd, intel, nvidia" in w
        for w in result.warnings
    )


def test_an_rtx_4090_on_llama_cpp_cuda_stays_calibrated() -> None:
    result = run_estimate(parse_request(request(RTX_4090, "llama.cpp", "cuda")))
    assert result.speed_calibrated is True
    assert not any("no published speed measurements" in w for w in result.warnings)


def test_sweep_rows_carry_the_vendor_check_as_run_estimate_does() -> None:
    single = parse_request(request(RTX_4090, "llama.cpp", "vulkan"))
    devices = [Device(**OTHER), Device(**RTX_4090)]  # type: ignore[arg-type]
    rows = sweep(single, devices, ["Q4_K_M"])
    by_device = {row.device_index: row.speed_calibrated for row in rows}
    assert by_device == {0: False, 1: True}
    for index, device in enumerate(devices):
        alone = run_estimate(replace(single, device=device))
        assert alone.speed_calibrated is by_device[index]


@pytest.mark.parametrize(
    ("name", "vendor"),
    [
        ("NVIDIA GeForce RTX 4090", "nvidia"),
        ("2x AMD Radeon Instinct MI50/MI60 (gfx906)", "amd"),
        ("Apple M2 Ultra (76-core GPU)", "apple"),
        ("Intel Arc A770 16GB", "intel"),
        ("Cambricon MLU590", "other"),
    ],
)
def test_device_vendor_reads_the_vendor_from_a_device_text(name: str, vendor: str) -> None:
    assert device_vendor(name) == vendor


def test_calibration_json_lists_the_vendors_of_each_backend_groups_own_rows() -> None:
    """The committed file agrees with the rows it was fitted on (a refit writes both)."""
    used = [  # the rows build_calibration fits: decode with a bandwidth, prefill with TFLOPS
        m
        for m in load_measurements()
        if not m.excluded
        and (m.device.bandwidth_gbps > 0 if m.kind == "decode" else bool(m.compute_tflops))
    ]
    expected = measured_vendors(used, group_key)
    groups = load_calibration()["groups"]
    for key, entry in groups.items():
        if "/" in key:
            assert entry["measured_vendors"] == expected.get(key.removesuffix("+moe"), []), key
    assert groups["llama.cpp/vulkan"]["measured_vendors"] == ["amd", "intel", "nvidia"]
    assert groups["llama.cpp/sycl"]["measured_vendors"] == ["intel"]
