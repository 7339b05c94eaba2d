"""Turn throughput.csv rows into speed-model inputs (DecodeWork, Device, Parallelism).

Models with a config (calibration/models.py MODEL_CONFIGS) get their bytes per token,
KV widths, layers and experts from the real estimator: parse_hf_config +
weights_breakdown with the measured file size (the same inputs api/speeds.py builds).
Models without one (the newest Strix Halo rows) fall back to the file's own columns and
the small SHAPES table below: MoE bytes = file bytes x active / total params, no KV and
no attention term for unknown shapes (tg128 / pp512 rows, where both are < 2 % of the
step). Both approximations are listed in calibration.json.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from estimator import kv as kvmod
from estimator.calibration.models import breakdown, model_spec
from estimator.model import ModelSpec
from estimator.speed import (
    DecodeWork,
    Device,
    Parallelism,
    device_class_for,
    normalize_backend,
    prefill_compute_tflops,
)
from estimator.units import GB

DATA = Path(__file__).resolve().parent.parent / "data"
THROUGHPUT_CSV = DATA / "validation" / "throughput.csv"
ACCELERATORS_CSV = DATA / "validation" / "accelerators.csv"
# Devices of throughput.csv that accelerators.csv lacks: dense FP16 tensor TFLOPS (Apple,
# RDNA1/2: the FP16 shader rate) and INT8 TOPS, one source per row.
EXTRA_DEVICES_CSV = DATA / "calibration_devices.csv"


@dataclass(frozen=True)
class Shape:
    """Architecture facts the speed model needs (model_configs.csv / configs/)."""

    n_layers: int  # layers with attention (for the prefill attention term and TP all-reduces)
    attention_width: int  # n_heads x head_dim
    hidden_size: int
    kv_bytes_per_token: int  # f16 K+V of the full-attention layers
    windowed_kv_bytes_per_token: int = 0
    window_tokens: int = 0
    n_experts: int = 0
    n_experts_per_token: int = 0
    untied_embedding_params: int = 0  # token_embd of dense models, not read when decoding


def _kv(layers: int, kv_heads: int, head_dim: int) -> int:
    """f16 K+V bytes per token over `layers`: layers x 2 x kv_heads x head_dim x 2 B."""
    return layers * 2 * kv_heads * head_dim * 2


# Keys are lower-case substrings of throughput.csv's `model`; first match wins.
SHAPES: tuple[tuple[str, Shape], ...] = (
    ("llama 3 70b", Shape(80, 8192, 8192, _kv(80, 8, 128), untied_embedding_params=128256 * 8192)),
    ("llama 3", Shape(32, 4096, 4096, _kv(32, 8, 128), untied_embedding_params=128256 * 4096)),
    ("llama 2 70b", Shape(80, 8192, 8192, _kv(80, 8, 128), untied_embedding_params=32000 * 8192)),
    ("llama 2 13b", Shape(40, 5120, 5120, _kv(40, 40, 128), untied_embedding_params=32000 * 5120)),
    ("llama 2 7b", Shape(32, 4096, 4096, _kv(32, 32, 128), untied_embedding_params=32000 * 4096)),
    ("mistral 7b", Shape(32, 4096, 4096, _kv(32, 8, 128), untied_embedding_params=32000 * 4096)),
    ("mixtral 8x7b", Shape(32, 4096, 4096, _kv(32, 8, 128), n_experts=8, n_experts_per_token=2)),
    ("gpt-oss-20b", Shape(24, 4096, 2880, _kv(12, 8, 64), _kv(12, 8, 64), 128, 32, 4)),
    ("gpt-oss-120b", Shape(36, 4096, 2880, _kv(18, 8, 64), _kv(18, 8, 64), 128, 128, 4)),
    (
        "qwen2.5-coder-7b",
        Shape(28, 3584, 3584, _kv(28, 4, 128), untied_embedding_params=152064 * 3584),
    ),
    (
        "qwen3-coder-30b-a3b",
        Shape(48, 4096, 2048, _kv(48, 4, 128), n_experts=128, n_experts_per_token=8),
    ),
    ("gemma 3 4b", Shape(34, 2048, 2560, _kv(5, 4, 256), _kv(29, 4, 256), 1024)),
    ("qwen3 32b", Shape(64, 8192, 5120, _kv(64, 8, 128), untied_embedding_params=151936 * 5120)),
    # 12 of 48 layers have attention; the other 36 are Gated DeltaNet (fixed state).
    ("qwen3-next", Shape(12, 4096, 2048, _kv(12, 2, 256), n_experts=512, n_experts_per_token=10)),
    ("deepseek-v2-lite", Shape(27, 3072, 2048, 0, n_experts=64, n_experts_per_token=6)),
)

# Bits per weight for rows without file_size_gb (whole file / params): GGUF values from
# the measured sizes in this file (Llama 2 7B Q4_0 3.82 GB / 6.74 B = 4.53; Llama 3 8B
# Q4_K_M 4.92 / 8.03 = 4.90); others nominal (4-bit + one fp16 scale per group).
BITS_PER_WEIGHT = (
    ("exl2 4.0", 4.0),
    ("exl2 3.0", 3.0),
    ("exl2 2.5", 2.5),
    ("q4f16_1", 4.5),
    ("gptq", 4.25),
    ("4-bit", 4.25),
    ("q4_k_m", 4.9),
    ("q4_0", 4.53),
    ("q8_0", 8.5),
    ("fp8", 8.0),
    ("fp16", 16.0),
    ("f16", 16.0),
    ("bf16", 16.0),
)

# throughput.csv device -> accelerators.csv name (for TFLOPS). Devices absent from
# accelerators.csv (RTX 3070/3080/4070 Ti/4080, RTX 4000/5000 Ada, Apple M1/M2 Max/M4 Max
# 32-core, RX 6700 XT/5700 XT, RTX 3090 Ti, RTX A4000, RTX PRO 6000 Max-Q) are in
# EXTRA_DEVICES_CSV under their throughput.csv name.
DEVICE_ALIASES = {
    "nvidia geforce rtx 3090": "GeForce RTX 3090",
    "nvidia geforce rtx 4090": "GeForce RTX 4090",
    "nvidia geforce rtx 3060 12gb": "GeForce RTX 3060 12GB",
    "nvidia geforce rtx 4080 super": "GeForce RTX 4080 SUPER",
    "nvidia geforce rtx 5090": "GeForce RTX 5090",
    "nvidia geforce rtx 5080": "GeForce RTX 5080",
    "nvidia geforce rtx 5070 ti": "GeForce RTX 5070 Ti",
    "nvidia geforce rtx 5060 ti 16gb": "GeForce RTX 5060 Ti 16GB",
    "nvidia rtx a6000": "RTX A6000",
    "nvidia rtx 6000 ada generation": "RTX 6000 Ada Generation",
    "nvidia rtx pro 6000 blackwell workstation edition": (
        "RTX PRO 6000 Blackwell (Workstation Edition)"
    ),
    "nvidia a40": "A40",
    "nvidia l40s": "L40S",
    "nvidia a100 pcie 80gb": "A100 80GB PCIe",
    "nvidia a100 sxm 80gb": "A100 80GB SXM4",
    "nvidia a100 (variant not stated)": "A100 80GB PCIe",  # both variants: 312 TFLOPS
    "nvidia a100 (pcie, no nvlink)": "A100 80GB PCIe",  # memory size not stated: assumed 80GB
    "nvidia h100 pcie 80gb": "H100 PCIe 80GB",
    "nvidia h100 sxm 80gb": "H100 SXM5 80GB",
    "nvidia dgx spark (gb10)": "DGX Spark (GB10 Grace Blackwell)",
    "amd ryzen ai max+ 395 (strix halo, radeon 8060s igpu)": (
        "Ryzen AI Max+ 395 (Strix Halo, Radeon 8060S)"
    ),
    "amd radeon rx 7900 xtx": "Radeon RX 7900 XTX",
    "amd radeon ai pro r9700": "Radeon AI PRO R9700",
    "apple m2 ultra (76-core gpu)": "M2 Ultra (76-core GPU)",
    "apple m3 max (40-core gpu)": "M3 Max (40-core GPU)",
    "apple m3 ultra (80-core gpu)": "M3 Ultra (80-core GPU)",
}


@dataclass(frozen=True)
class Accelerator:
    bandwidth_gbps: float
    fp16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None


@dataclass(frozen=True)
class Measurement:
    """One usable throughput.csv row, ready for the speed model."""

    row: int  # data row number (1 = first row after the header)
    kind: str  # "decode" | "prefill"
    engine: str
    backend: str
    device_name: str
    device: Device
    parallelism: Parallelism
    work: DecodeWork
    batch: int
    prompt_tokens: int
    output_tokens: int
    measured_tps: float  # decode: per sequence (value_tps / batch); prefill: prompt tokens/s
    compute_tflops: float | None  # fp16 (fp8 for FP8 weights); None = unknown
    attention_width: int  # n_heads x head_dim from SHAPES, 0 when unknown
    shape_known: bool
    excluded: str  # reason the row is left out of the fit, "" if used
    quant: str = ""  # throughput.csv quant label
    model: str = ""  # throughput.csv model name
    config_known: bool = False  # bytes and shapes from parse_hf_config + weights_breakdown
    params_total: float = 0.0
    source: str = ""  # throughput.csv source column


def _number(text: str | None) -> float | None:
    return float(text) if text else None


def load_accelerators(path: Path = ACCELERATORS_CSV) -> dict[str, Accelerator]:
    """accelerators.csv by name (plus, for the default path, calibration_devices.csv under
    the throughput.csv device names)."""
    paths = (path, EXTRA_DEVICES_CSV) if path == ACCELERATORS_CSV else (path,)
    out = {}
    for each in paths:
        with each.open(newline="") as handle:
            for row in csv.DictReader(handle):
                out[row["name"]] = Accelerator(
                    float(row["bandwidth_gbps"]),
                    _number(row.get("fp16_tflops_dense")),
                    _number(row.get("fp8_tflops_dense")),
                    _number(row.get("int8_tops")),
                )
    return out


def split_device(device: str) -> tuple[int, str]:
    """'2x NVIDIA GeForce RTX 4090' -> (2, 'NVIDIA GeForce RTX 4090')."""
    match = re.match(r"\s*(\d+)x\s+(.*)", device)
    return (int(match.group(1)), match.group(2).strip()) if match else (1, device.strip())


def engine_of(backend_text: str) -> str:
    """Engine named in throughput.csv's backend column; plain backends are llama.cpp."""
    text = backend_text.lower()
    for key, engine in (
        ("exllama", "exllamav2"),
        ("mlc", "mlc"),
        ("vllm", "vllm"),
        ("tensorrt", "tensorrt-llm"),
    ):
        if key in text:
            return engine
    return "llama.cpp"


def parse_test(test: str, batch: int) -> tuple[str, int, int] | None:
    """(kind, prompt_tokens, output_tokens) for the test names in throughput.csv.

    tgN@dD: prompt D, output N. batched TG n after PP p: prompt p, output n. 'decode 256 tok'
    follows an 8-token prompt; 'decode (single stream)' has no stated length (assumed tg128).
    """
    text = test.lower()
    patterns = (
        (r"^tg(\d+)(?:@d(\d+))?", lambda m: ("decode", int(m.group(2) or 0), int(m.group(1)))),
        (r"batched tg(\d+) after pp(\d+)", lambda m: ("decode", int(m.group(2)), int(m.group(1)))),
        (r"^pp(\d+)", lambda m: ("prefill", int(m.group(1)), 0)),
        (r"^prefill (\d+) tok", lambda m: ("prefill", int(m.group(1)), 0)),
        (r"^decode (\d+) tok", lambda m: ("decode", 8, int(m.group(1)))),
        (r"^decode \(single stream\)", lambda m: ("decode", 0, 128)),
    )
    for pattern, build in patterns:
        match = re.search(pattern, text)
        if match:
            return build(match)
    return None


def shape_for(model: str) -> Shape | None:
    """The SHAPES entry whose key occurs in the model name, if any."""
    name = model.lower()
    return next((shape for key, shape in SHAPES if key in name), None)


def file_bytes_for(row: dict[str, str], rows: list[dict[str, str]]) -> float:
    """GGUF/checkpoint bytes: file_size_gb; else a sibling row of the same model with a size
    (the MXFP4-expert GGUFs); else params x BITS_PER_WEIGHT / 8."""
    if row["file_size_gb"]:
        return float(row["file_size_gb"]) * GB
    if "mxfp4" in row["quant"].lower():
        for other in rows:
            if other["model"] == row["model"] and other["file_size_gb"]:
                return float(other["file_size_gb"]) * GB
    quant = row["quant"].lower()
    bits = next(b for key, b in BITS_PER_WEIGHT if key in quant)
    return float(row["params_total_b"]) * 1e9 * bits / 8


def active_bytes_for(row: dict[str, str], file_bytes: float, shape: Shape | None) -> float:
    """Weight bytes read per token at batch 1, excluding token_embd.

    Dense: file bytes minus the untied token_embd (at the file's mean bits per weight).
    MoE: file bytes x params_active / params_total (the brief's approximation: it treats
    expert and non-expert tensors as equally compressed).
    """
    total = float(row["params_total_b"])
    active = float(row["params_active_b"])
    if active < total:
        return file_bytes * active / total
    embedding = shape.untied_embedding_params if shape else 0
    return file_bytes * (1 - embedding / (total * 1e9))


def exclusion_reason(row: dict[str, str], kind: str) -> str:
    """Rows the source itself flags as broken or obsolete for this test kind."""
    notes = row["notes"].lower()
    if kind == "prefill" and row["quant"] == "F16" and ("outlier" in notes or "anomalous" in notes):
        return "source flags the 8B F16 pp value as an outlier / anomalous"
    if kind == "prefill" and "far slower than later builds" in notes:
        return "day-one MoE build, prompt processing far slower than later builds (source)"
    return ""


def device_for(
    name: str, bw_text: str, accelerators: dict[str, Accelerator]
) -> tuple[Device, Accelerator | None]:
    """Device from throughput.csv's bandwidth, with accelerators.csv TFLOPS via DEVICE_ALIASES."""
    spec = accelerators.get(DEVICE_ALIASES.get(name.lower(), name))
    bandwidth = float(bw_text) if bw_text else (spec.bandwidth_gbps if spec else 0.0)
    tflops = spec.fp16_tflops if spec else None
    return Device(bandwidth, tflops, device_class_for(name, bandwidth)), spec


def parallelism_for(engine: str, backend_text: str, n_devices: int) -> Parallelism:
    """vLLM / MLC 'TP=N' rows are tensor parallel; llama.cpp multi-GPU rows are layer split."""
    if n_devices <= 1:
        return Parallelism()
    mode = "layer" if engine == "llama.cpp" else "tensor"
    return Parallelism(n_devices=n_devices, mode=mode)


def work_for(row: dict[str, str], active_bytes: float, shape: Shape | None) -> DecodeWork:
    """DecodeWork for a row: bytes from the file, KV and experts from the shape table."""
    total = float(row["params_total_b"]) * 1e9
    active = float(row["params_active_b"]) * 1e9
    expert_bytes = 0.0
    if shape and shape.n_experts and active < total:
        # total - active = expert params x (1 - k/E); same bytes/param as the whole file
        expert_params = (total - active) / (1 - shape.n_experts_per_token / shape.n_experts)
        expert_bytes = active_bytes * total / active * expert_params / total
    if shape is None:
        return DecodeWork(
            weight_bytes_per_token=active_bytes, params_active=active, is_moe=active < total
        )
    return DecodeWork(
        weight_bytes_per_token=active_bytes,
        params_active=active,
        kv_bytes_per_token=shape.kv_bytes_per_token,
        windowed_kv_bytes_per_token=shape.windowed_kv_bytes_per_token,
        window_tokens=shape.window_tokens,
        expert_bytes=expert_bytes,
        n_experts=shape.n_experts,
        n_experts_per_token=shape.n_experts_per_token,
        n_layers=shape.n_layers,
        hidden_size=shape.hidden_size,
        is_moe=active < total,
    )


def kv_widths(spec: ModelSpec) -> tuple[int, int, int]:
    """kv.kv_read_split at f16: the same split the product uses (api/speeds)."""
    return kvmod.kv_read_split(spec, kv_dtype="f16")


def work_from_config(row: dict[str, str], engine: str, file_bytes: float) -> DecodeWork | None:
    """DecodeWork from the real estimator (models.breakdown), None without a config."""
    spec = model_spec(row["model"])
    wb = breakdown(row["model"], row["quant"], engine, file_bytes)
    if spec is None or wb is None:
        return None
    full, windowed, window = kv_widths(spec)
    return DecodeWork(
        weight_bytes_per_token=wb.active_bytes_per_token,
        params_active=spec.params_active,
        kv_bytes_per_token=full,
        windowed_kv_bytes_per_token=windowed,
        window_tokens=window,
        expert_bytes=wb.expert_bytes,
        n_experts=spec.n_experts,
        n_experts_per_token=spec.n_experts_per_token,
        replicated_bytes=wb.replicated_bytes,
        n_layers=spec.n_layers,
        hidden_size=spec.hidden_size,
        is_moe=spec.n_experts > 0,
    )


def measurement_for(
    index: int,
    row: dict[str, str],
    rows: list[dict[str, str]],
    accelerators: dict[str, Accelerator],
) -> Measurement | None:
    """One Measurement, or None when the test name is not understood."""
    batch = int(row["batch"] or 1)
    parsed = parse_test(row["test"], batch)
    if parsed is None:
        return None
    kind, prompt, output = parsed
    n_devices, name = split_device(row["device"])
    device, spec = device_for(name, row["device_bw_gbps"], accelerators)
    engine = engine_of(row["backend"])
    backend = normalize_backend(row["backend"])
    if engine != "llama.cpp":  # the column names the engine, not its GPU backend
        backend = "rocm" if "amd" in name.lower() else "cuda"
    shape = shape_for(row["model"])
    file_bytes = file_bytes_for(row, rows)
    config = model_spec(row["model"])
    work = work_from_config(row, engine, file_bytes) or work_for(
        row, active_bytes_for(row, file_bytes, shape), shape
    )
    width = config.n_heads * config.head_dim if config else shape.attention_width if shape else 0
    tflops = device.fp16_tflops
    if spec and engine == "llama.cpp":
        tflops = prefill_compute_tflops(spec.fp16_tflops, spec.int8_tops)
    elif spec and "fp8" in row["quant"].lower() and spec.fp8_tflops:
        tflops = spec.fp8_tflops
    value = float(row["value_tps"])
    return Measurement(
        row=index,
        kind=kind,
        engine=engine,
        backend=backend,
        device_name=name,
        device=device,
        parallelism=parallelism_for(engine, row["backend"], n_devices),
        work=work,
        batch=batch,
        prompt_tokens=prompt,
        output_tokens=output,
        measured_tps=value / batch if kind == "decode" else value,
        compute_tflops=tflops,
        attention_width=width,
        shape_known=shape is not None or config is not None,
        excluded=exclusion_reason(row, kind),
        quant=row["quant"],
        model=row["model"],
        config_known=config is not None,
        params_total=float(row["params_total_b"]) * 1e9,
        source=row["source"],
    )


def load_measurements(path: Path = THROUGHPUT_CSV) -> list[Measurement]:
    """Every throughput.csv row as a Measurement (excluded rows carry their reason)."""
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    accelerators = load_accelerators()
    parsed = (measurement_for(i, row, rows, accelerators) for i, row in enumerate(rows, 1))
    return [m for m in parsed if m is not None]
