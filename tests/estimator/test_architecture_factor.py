"""Old GPU generations decode slower than the bandwidth model says (speed.arch_class,
speed.architecture_factor; fitted in calibration/build.py fit_arch_factors)."""

import math
import statistics

import pytest

from estimator.api import estimate
from estimator.calibration import load_calibration
from estimator.calibration.build import decode_row, fit_decode, old_class, predicted_tps
from estimator.calibration.rows import load_measurements
from estimator.speed import (
    DecodeWork,
    Device,
    arch_class,
    architecture_factor,
    decode_speed,
    speed_multiplier,
)


@pytest.mark.parametrize(
    ("architecture", "expected"),
    [
        ("Kepler", "pascal_or_older"),
        ("Maxwell", "pascal_or_older"),
        ("Pascal", "pascal_or_older"),
        ("Volta", "volta"),
        ("GCN 5.1 (Vega 20)", "gcn"),
        ("GCN 4", "gcn"),
        ("Turing", ""),
        ("Ampere", ""),
        ("Ada Lovelace", ""),
        ("RDNA 3", ""),
        ("CDNA 3", ""),
        ("Apple M3", ""),
        ("", ""),
    ],
)
def test_it_classes_gpu_generations(architecture, expected):
    assert arch_class(architecture) == expected


def test_the_factors_are_the_median_shortfall_of_each_class():
    # Refit here what calibration.json stores: the fit of the newer GPUs predicts each old
    # row; the factor is exp(median log(measured step / predicted step)) of its class.
    rows = [
        decode_row(m)
        for m in load_measurements()
        if m.kind == "decode" and not m.excluded and m.device.bandwidth_gbps > 0
    ]
    fits = fit_decode(rows)
    stored = load_calibration()["architecture_factors"]
    for cls in ("volta", "gcn", "pascal_or_older"):
        logs = []
        for r in rows:
            if old_class(r) == cls:
                # predicted_tps without factors = 1 / the owner group's step
                logs.append(math.log(r.measured_step * predicted_tps(r, fits, {})))
        assert stored[cls]["n"] == len(logs) >= 2
        assert stored[cls]["factor"] == pytest.approx(math.exp(statistics.median(logs)), abs=1e-4)
        # every old class decodes slower than the newer GPUs' model says
        assert stored[cls]["factor"] > 1.1


def test_a_pascal_card_decodes_slower_by_its_factor():
    work = DecodeWork(weight_bytes_per_token=4.9e9, params_active=8e9, n_layers=32)
    new = Device(484.3, None, "consumer")
    old = Device(484.3, None, "consumer", "Pascal")  # GTX 1080 Ti: 484.3 GB/s
    fast = decode_speed(work, new, engine="llama.cpp", backend="cuda").step_s
    slow = decode_speed(work, old, engine="llama.cpp", backend="cuda").step_s
    assert slow / fast == pytest.approx(architecture_factor("Pascal"))
    assert architecture_factor("Kepler") == architecture_factor("Pascal")
    assert architecture_factor("Turing") == 1.0


def test_the_public_api_reads_the_architecture():
    config = {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
    }
    device: dict[str, object] = {"memory_gb": 24, "bandwidth_gbps": 346}  # Tesla P40
    request: dict[str, object] = {
        "model": {"hf_config": config},
        "weights": {"format": "gguf", "quant": "Q4_K_M"},
        "device": device,
    }
    plain = estimate(request)
    pascal = estimate({**request, "device": {**device, "architecture": "Pascal"}})
    ratio = plain["decode_tokens_per_s"]["estimate"] / pascal["decode_tokens_per_s"]["estimate"]
    # the plain card is current NVIDIA GDDR hardware and takes that family's corrections;
    # the Pascal card takes the old-generation factor instead
    current = speed_multiplier(
        "decode", "llama.cpp", "cuda", Device(346, family="nvidia-gddr", vendor="nvidia"), "Q4_K_M"
    )
    assert ratio == pytest.approx(architecture_factor("Pascal") * current, rel=1e-6)


def test_the_explanation_names_the_old_gpu_factor():
    config = {
        "model_type": "llama",
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        "max_position_embeddings": 8192,
    }
    device = {"memory_gb": 16, "bandwidth_gbps": 900, "architecture": "Volta"}  # V100
    result = estimate(
        {
            "model": {"hf_config": config},
            "weights": {"format": "gguf", "quant": "Q8_0"},
            "device": device,
        }
    )
    entry = next(e for e in result["explanation"] if e["figure"] == "decode_tokens_per_s")
    assert entry["inputs"]["architecture_factor"] == architecture_factor("Volta") > 1
    assert "old-GPU factor" in entry["formula"]
