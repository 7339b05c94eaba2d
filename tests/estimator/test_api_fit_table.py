"""fit_table (the sweep's memory half) and sweep(first_fit=True) give exactly what the
full sweep gives the cells they keep: a card chooser reads the same answer for less work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from estimator.api import Device, Request, parse_request
from estimator.api.sweep import fit_table, sweep
from estimator.weights import GGUF_FILE_TYPES, HF_FORMATS

CONFIGS = Path(__file__).resolve().parents[2] / "estimator/data/validation/configs"
LLAMA = json.loads((CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text())
QWEN_MOE = json.loads((CONFIGS / "Qwen__Qwen3-30B-A3B.json").read_text())
# From 4 GB to 192 GB, discrete and unified, so every verdict and the paged start rule's
# edge (a pool too small for one sequence) come up.
DEVICES = [
    Device(memory_gb=gb, bandwidth_gbps=500, fp16_tflops=100, memory_kind=kind)
    for gb in (4, 8, 9.5, 10, 12, 16, 20, 24, 32, 48, 64, 80, 96, 141, 192)
    for kind in ("discrete", "unified")
]


def request(config: dict[str, object], engine: str, context: int, sequences: int) -> Request:
    body: dict[str, object] = {
        "model": {"hf_config": config},
        "engine": {"name": engine},
        "device": {"memory_gb": 24, "bandwidth_gbps": 1000},
        "workload": {"context_tokens": context, "concurrent_sequences": sequences},
    }
    if engine == "vllm":
        body["weights"] = {"format": "hf", "dtype": "bf16"}
    return parse_request(body)


CASES = [
    (LLAMA, "llama.cpp", 8192, 1),
    (LLAMA, "llama.cpp", 131072, 2),
    (QWEN_MOE, "llama.cpp", 32768, 4),
    (LLAMA, "vllm", 8192, 1),
    (LLAMA, "vllm", 131072, 1),  # the pool must hold 131,072 tokens to start
    (QWEN_MOE, "vllm", 40960, 8),
]


@pytest.mark.parametrize(("config", "engine", "context", "sequences"), CASES)
def test_every_cell_fits_exactly_when_the_sweep_says_it_does(
    config: dict[str, object], engine: str, context: int, sequences: int
) -> None:
    req = request(config, engine, context, sequences)
    quants = list(GGUF_FILE_TYPES) if engine == "llama.cpp" else ["bf16", "fp8", "awq-int4"]
    measured = {"Q4_K_M": 5_000_000_000} if engine == "llama.cpp" else {}
    table = fit_table(req, DEVICES, quants, measured_bytes=measured)
    rows = sweep(req, DEVICES, quants, measured_bytes=measured)
    verdicts = {row.verdict for row in rows}
    assert "does_not_fit" in verdicts and verdicts - {"does_not_fit"}  # both sides tested
    for row in rows:
        q = quants.index(row.quant)
        assert table.fits[row.device_index][q] == (row.verdict != "does_not_fit"), row
        assert table.need_bytes[q] == row.per_device_bytes
        assert table.weights_bytes[q] == row.weights_bytes
        assert table.usable_bytes[row.device_index] == row.usable_bytes_per_device


def test_a_worked_example_fits_within_the_margin_but_not_past_the_device() -> None:
    req = request(LLAMA, "llama.cpp", 8192, 1)
    devices = [Device(memory_gb=gb, bandwidth_gbps=300) for gb in (9.5, 10)]
    table = fit_table(req, devices, ["Q8_0"])
    # Llama 3.1 8B Q8_0: 8,538,098,092 B of weights + KV 8,192 tokens x 131,072 B
    # (32 layers x 8 KV heads x 128 x 2 (K and V) x 2 B) = 1,073,741,824 + llama.cpp's
    # compute buffers 307,903,078 = 9,919,742,994 B.
    assert table.need_bytes == (8_538_098_092 + 1_073_741_824 + 307_903_078,)
    assert table.need_bytes == (9_919_742_994,)
    # llama.cpp offers total - 1 GiB by default: 10e9 - 1,073,741,824 = 8,926,258,176.
    assert table.usable_bytes == (9_500_000_000 - 1_073_741_824, 8_926_258_176)
    # Above that default budget, but within the 10 GB device with --fit off (tight);
    # past all of the 9.5 GB one.
    assert table.fits == ((False,), (True,))
    assert [row.verdict for row in sweep(req, devices, ["Q8_0"])] == ["does_not_fit", "tight"]


@pytest.mark.parametrize(("config", "engine", "context", "sequences"), CASES)
def test_first_fit_keeps_the_row_a_ladder_would_pick(
    config: dict[str, object], engine: str, context: int, sequences: int
) -> None:
    req = request(config, engine, context, sequences)
    ladder = ["Q8_0", "Q6_K", "Q4_K_M", "IQ2_XXS"] if engine == "llama.cpp" else list(HF_FORMATS)
    ladder = [q for q in ladder if q not in ("nvfp4", "mxfp4")]  # Blackwell / MoE only
    full = sweep(req, DEVICES, ladder)
    picked = sweep(req, DEVICES, ladder, first_fit=True)
    assert len(picked) == len(DEVICES)
    for index, row in enumerate(picked):
        own = full[index * len(ladder) : (index + 1) * len(ladder)]
        expected = next((r for r in own if r.verdict != "does_not_fit"), own[-1])
        assert row == expected
