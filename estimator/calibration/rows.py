"""Turn throughput.csv rows into speed-model inputs (DecodeWork, Device, Parallelism).

Models with a config (calibration/models.py MODEL_CONFIGS) get their bytes per token,
KV widths, layers and experts from the real estimator: parse_hf_config +
weights_breakdown with the measured file size, through api/speeds.py's model_work (the
builder the product uses). Models without one (GLM-4.7-Flash, Ministral-3-14B) fall
back to the file's own columns: MoE bytes = file bytes x active / total params, no KV
and no attention term (tg128 / pp512 rows, where both are < 2 % of the step). Both
approximations are listed in calibration.json.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from estimator import kv as kvmod
from estimator.api.speeds import model_work
from estimator.calibration.models import breakdown, model_spec
from estimator.speed import (
    DecodeWork,
    Device,
    Parallelism,
    device_class_for,
    moe_stream_bytes,
    normalize_backend,
    prefill_compute_tflops,
)
from estimator.speed.families import device_family
from estimator.units import GB

DATA = Path(__file__).resolve().parent.parent / "data"
THROUGHPUT_CSV = DATA / "validation" / "throughput.csv"
ACCELERATORS_CSV = DATA / "validation" / "accelerators.csv"
# Devices of throughput.csv that accelerators.csv lacks: dense FP16 tensor TFLOPS (Apple,
# RDNA1/2: the FP16 shader rate) and INT8 TOPS, one source per row.
EXTRA_DEVICES_CSV = DATA / "calibration_devices.csv"


# Bits per weight for rows without file_size_gb (whole file / params): GGUF values from
# measured sizes (Q4_0 and Q4_K_M in this file, the other K-quants in gguf_sizes.csv)
# (Llama 2 7B Q4_0 3.82 GB / 6.74 B = 4.53; Llama 3 8B
# Q4_K_M 4.92 / 8.03 = 4.90); others nominal (4-bit + one fp16 scale per group; MLX:
# 4 or 8 bits + an fp16 scale and bias per 64 = +0.5; MXFP4: 4 bits + an 8-bit scale per
# 32 = 4.25).
BITS_PER_WEIGHT = (
    ("mlx 4-bit", 4.5),
    ("mlx 8-bit", 8.5),
    ("mlx bf16", 16.0),
    ("awq", 4.25),
    ("int4", 4.25),
    ("mxfp4", 4.25),
    ("exl2 4.0", 4.0),
    ("exl2 3.0", 3.0),
    ("exl2 2.5", 2.5),
    ("q4f16_1", 4.5),
    ("gptq", 4.25),
    ("4-bit", 4.25),
    ("q4_k_m", 4.9),
    # K-quant mixes from the Llama 3.1 8B files in gguf_sizes.csv (GB x 8 / 8.03 B):
    # Q4_K_S 4.69, Q5_K_S 5.60, Q5_K_M 5.73, Q6_K 6.60, Q3_K_M 4.02, Q2_K 3.18 GB
    ("q4_k_s", 4.67),
    ("q5_k_s", 5.58),
    ("q5_k_m", 5.71),
    ("q6_k", 6.58),
    ("q3_k_m", 4.0),
    ("q2_k", 3.17),
    ("iq4_nl", 4.5),  # ggml-common.h block_iq4_nl: 32 weights in 16 B + an fp16 scale
    ("iq4_xs", 4.25),  # block_iq4_xs: 256 weights in 136 B (4.25 bits)
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
    "apple m4 pro (20-core gpu)": "M4 Pro (20-core GPU)",
    "apple m4 max (40-core gpu)": "M4 Max (40-core GPU)",
    "nvidia geforce rtx 5070": "GeForce RTX 5070",
    "nvidia h200 sxm 141gb": "H200 SXM 141GB",
    # SXM and NVL H200 share the 4.8 TB/s HBM3e; NVLink class differs (assumed SXM).
    "nvidia h200 141gb (sxm/nvl not stated)": "H200 SXM 141GB",
    "nvidia b200 180gb": "B200 (HGX/DGX B200)",
    "amd instinct mi300x": "Instinct MI300X",
    # "fully NVLink" A100 80GB: the SXM4 board (PCIe A100s pair over a bridge at most).
    "nvidia a100 80gb (form factor not stated; 'fully nvlink')": "A100 80GB SXM4",
}


@dataclass(frozen=True)
class Accelerator:
    bandwidth_gbps: float
    fp16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    link_gbps: float | None = None  # one-direction NVLink / Infinity Fabric GB/s
    architecture: str = ""  # calibration_devices.csv architecture ("Pascal", "Volta" ...)
    tdp_w: float | None = None  # board power (accelerators.csv tdp_w; speed.power_capped_tflops)


def link_gbps(interconnect: str) -> float | None:
    """One-direction GPU-to-GPU bandwidth from accelerators.csv's interconnect text:
    "NVLink 4: 900 GB/s" -> 450 (NVIDIA quotes both directions together), "Infinity
    Fabric 896 GB/s" -> 448; None for PCIe-only boards and bridges of two cards."""
    match = re.search(r"(NVLink \d+|Infinity Fabric)\D*?([\d.]+) GB/s", interconnect)
    if match is None or "bridge" in interconnect.lower():
        return None
    return float(match.group(2)) / 2


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
    attention_width: int  # n_heads x head_dim of the config, 0 without one
    excluded: str  # reason the row is left out of the fit, "" if used
    quant: str = ""  # throughput.csv quant label
    model: str = ""  # throughput.csv model name
    config_known: bool = False  # bytes and shapes from parse_hf_config + weights_breakdown
    params_total: float = 0.0
    source: str = ""  # throughput.csv source column
    date: str = ""  # YYYY-MM (or YYYY) of the measurement, throughput.csv date column
    legacy_build: bool = False  # an engine build before its current fast path (legacy_build())
    notes: str = ""  # throughput.csv notes column (flags such as -fa 1)
    file_bytes: float = 0.0  # the weights file (file_bytes_for)
    ubatch: int = 512  # llama.cpp's physical batch of a prompt run (ubatch_of)


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
                    link_gbps(row.get("interconnect") or ""),
                    row.get("architecture") or "",
                    _number(row.get("tdp_w")),
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
        ("ik_llama", "ik_llama.cpp"),
        ("exllama", "exllamav2"),
        ("mlc", "mlc"),
        ("mlx", "mlx"),  # before vllm: "MLX (vllm-mlx ...)" runs MLX
        ("sglang", "sglang"),
        ("vllm", "vllm"),
        ("tensorrt", "tensorrt-llm"),
    ):
        if key in text:
            return engine
    return "llama.cpp"


# llama.cpp turned on CUDA graphs for batch-1 decode in May 2024 (PR #6766 "Introduction
# of CUDA Graphs to LLama.cpp", merged 2024-05-08): the per-token launch cost fell by
# about half. Rows measured before this month are "legacy" builds.
CUDA_GRAPHS_SINCE = "2024-06"


# Serving engines before their 2025 rewrites: vLLM before 0.8 (V1 engine the default from
# 0.8.0), SGLang's 0.4 line, TensorRT-LLM before 1.0 (PyTorch flow the default from 1.0).
# The same DeepSeek-R1 FP8 on 8 x H200/B200 runs at 12-23 tok/s per user in the March 2025
# dstack rows (vLLM 0.7.4, SGLang 0.4.3, TensorRT-LLM 0.17) and 39-109 in SGLang 0.5.x.
SERVING_CURRENT_SINCE = {"vllm": (0, 8), "sglang": (0, 5), "tensorrt-llm": (1, 0)}


def engine_version(backend_text: str) -> tuple[int, int] | None:
    """(major, minor) of the first version number in throughput.csv's backend column
    ("SGLang 0.4.3.post2 (TP=8)" -> (0, 4)); None when it states none."""
    match = re.search(r"\b(\d+)\.(\d+)", backend_text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def legacy_build(engine: str, backend: str, date: str, backend_text: str = "") -> bool:
    """Whether a row predates its engine's current fast path: a llama.cpp CUDA row before
    CUDA graphs (date < CUDA_GRAPHS_SINCE), or a serving engine release older than
    SERVING_CURRENT_SINCE. A row without a date or version counts as current."""
    if engine == "llama.cpp":
        return backend == "cuda" and bool(date) and date < CUDA_GRAPHS_SINCE
    since = SERVING_CURRENT_SINCE.get(engine)
    version = engine_version(backend_text)
    return since is not None and version is not None and version < since


# llama-bench ran prompt processing without flash attention by default before 2025; rows
# of that era (or stating FA off) are "legacy" prefill: today's builds (FA on or auto,
# MMQ by default since June 2024) are 20-45 % faster on the same GeForce cards
# (throughput.csv rows from llama.cpp pull requests of 2026 against 2024 rows).
PREFILL_CURRENT_SINCE = "2025"
_FA_ON = re.compile(r"-fa 1|fa=1|fa on|flash attention on|flashattention on|-fa\b(?! 0)")
_FA_OFF = re.compile(r"fa 0|fa off|fa=0|flash attention off")


def prefill_era(date: str, notes: str) -> str:
    """ "current" or "legacy" for a llama.cpp prefill row: the notes' flash-attention
    flag when they state one, else its date against PREFILL_CURRENT_SINCE."""
    text = notes.lower()
    if _FA_OFF.search(text):
        return "legacy"
    if _FA_ON.search(text):
        return "current"
    return "current" if not date or date >= PREFILL_CURRENT_SINCE else "legacy"


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
        (
            r"batched sharegpt \(avg (\d+) in / (\d+) out\)",
            lambda m: ("decode", int(m.group(1)), int(m.group(2))),
        ),
    )
    for pattern, build in patterns:
        match = re.search(pattern, text)
        if match:
            return build(match)
    return None


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


# "-ub 2048", "n_ubatch 2048", "ubatch=4096", "--ubatch-size 1024" in a row's notes.
_UBATCH = re.compile(r"(?:-ub|--ubatch-size|n_ubatch|ubatch)\s*[= ]\s*(\d+)\b")
DEFAULT_UBATCH = 512  # llama-bench's and llama-server's default n_ubatch


def ubatch_of(notes: str) -> int:
    """The physical batch (n_ubatch) a row's notes name, else llama.cpp's default 512.
    "-ub 2048 / n_ubatch 2048 / ubatch=2048" all name one; the first such number counts."""
    found = _UBATCH.search(notes.lower())
    return int(found.group(1)) if found else DEFAULT_UBATCH


def stream_bytes_of(m: Measurement) -> float:
    """Expert bytes a prefill ubatch of the row reads beyond the active ones
    (speed.moe_stream_bytes); a MoE row without expert shapes (no config): its file less
    the bytes read per token."""
    if not m.work.is_moe:
        return 0.0
    tokens = min(m.ubatch, m.prompt_tokens)
    if m.work.n_experts:
        return moe_stream_bytes(m.work, tokens)
    return max(m.file_bytes - m.work.weight_bytes_per_token, 0.0)


def active_bytes_for(row: dict[str, str], file_bytes: float) -> float:
    """Weight bytes read per token at batch 1 for a model without a config: the whole
    file for dense models; MoE: file bytes x params_active / params_total (the brief's
    approximation: it treats expert and non-expert tensors as equally compressed)."""
    total = float(row["params_total_b"])
    active = float(row["params_active_b"])
    return file_bytes * active / total if active < total else file_bytes


def exclusion_reason(row: dict[str, str], kind: str) -> str:
    """Rows left out of the fit: runs with weights in host RAM (tests/estimator/
    test_offload_speed.py checks them against the offload formulas), forks the portal
    does not size, and rows the source itself flags as broken or obsolete."""
    notes = row["notes"].lower()
    if row.get("offload"):
        return "part of the weights in host RAM (checked by the offload tests, not fitted)"
    if engine_of(row["backend"]) == "ik_llama.cpp":
        return "ik_llama.cpp fork: not an engine the portal sizes"
    n_devices, name = split_device(row["device"])
    if (
        n_devices > 1
        and "variant not stated" in name.lower()
        and engine_of(row["backend"]) != "llama.cpp"
    ):
        return "GPU variant (PCIe or SXM) not stated: the link of tensor parallelism is unknown"
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
    architecture = spec.architecture if spec else ""
    device = Device(
        bandwidth,
        tflops,
        device_class_for(name, bandwidth),
        architecture,
        family=device_family(name, architecture),
        vendor=device_vendor(name),
        tdp_w=spec.tdp_w if spec else None,
    )
    return device, spec


def parallelism_for(
    engine: str, backend_text: str, n_devices: int, spec: Accelerator | None = None
) -> Parallelism:
    """Serving engines' 'TP=N' rows are tensor parallel; llama.cpp multi-GPU rows are
    layer split. The link is the board's NVLink / Infinity Fabric when accelerators.csv
    lists one (link_gbps), else Parallelism's PCIe default."""
    if n_devices <= 1:
        return Parallelism()
    mode = "layer" if engine == "llama.cpp" else "tensor"
    if spec is not None and spec.link_gbps:
        return Parallelism(n_devices=n_devices, mode=mode, interconnect_gbps=spec.link_gbps)
    return Parallelism(n_devices=n_devices, mode=mode)


def work_for(row: dict[str, str], file_bytes: float) -> DecodeWork:
    """DecodeWork of a model without a config: bytes from the file, no shapes."""
    total = float(row["params_total_b"]) * 1e9
    active = float(row["params_active_b"]) * 1e9
    return DecodeWork(
        weight_bytes_per_token=active_bytes_for(row, file_bytes),
        params_active=active,
        is_moe=active < total,
    )


def work_from_config(row: dict[str, str], engine: str, file_bytes: float) -> DecodeWork | None:
    """DecodeWork from the real estimator (models.breakdown, KV read at f16), None
    without a config."""
    spec = model_spec(row["model"])
    wb = breakdown(row["model"], row["quant"], engine, file_bytes)
    if spec is None or wb is None:
        return None
    return model_work(spec, wb, kvmod.kv_read_split(spec, kv_dtype="f16"))


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
    if engine == "mlx":
        backend = "metal"
    elif engine != "llama.cpp":  # the column names the engine, not its GPU backend
        backend = "rocm" if "amd" in name.lower() else "cuda"
    file_bytes = file_bytes_for(row, rows)
    config = model_spec(row["model"])
    work = work_from_config(row, engine, file_bytes) or work_for(row, file_bytes)
    width = config.n_heads * config.head_dim if config else 0
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
        parallelism=parallelism_for(engine, row["backend"], n_devices, spec),
        work=work,
        batch=batch,
        prompt_tokens=prompt,
        output_tokens=output,
        measured_tps=value / batch if kind == "decode" else value,
        compute_tflops=tflops,
        attention_width=width,
        excluded=exclusion_reason(row, kind),
        quant=row["quant"],
        model=row["model"],
        config_known=config is not None,
        params_total=float(row["params_total_b"]) * 1e9,
        source=row["source"],
        date=row.get("date", ""),
        legacy_build=legacy_build(engine, backend, row.get("date", ""), row["backend"]),
        notes=row.get("notes", ""),
        file_bytes=file_bytes,
        ubatch=ubatch_of(row["notes"]),
    )


TTFT_CSV = DATA / "validation" / "ttft.csv"


def load_ttft_measurements(
    path: Path = TTFT_CSV,
) -> list[tuple[Measurement, Measurement, float]]:
    """ttft.csv's single-request rows (batch 1) as (the prompt as a prefill Measurement,
    the first decode step at the prompt's depth as a decode Measurement, TTFT seconds).
    The two Measurements are built like throughput.csv rows (tests "pp<N>" and
    "tg1@d<N>"), so they get the same bytes, devices and engines."""
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    accelerators = load_accelerators()
    out = []
    for i, row in enumerate(rows, 1):
        if int(row["batch"] or 1) != 1:
            continue
        base = {**row, "file_size_gb": "", "device_bw_gbps": "", "value_tps": "1", "offload": ""}
        base.setdefault("notes", "")
        prompt = row["prompt_tokens"]
        prefill = measurement_for(i, {**base, "test": f"pp{prompt}"}, [], accelerators)
        step = measurement_for(i, {**base, "test": f"tg1@d{prompt}"}, [], accelerators)
        if prefill is not None and step is not None:
            out.append((prefill, step, float(row["ttft_ms"]) / 1000))
    return out


def load_measurements(path: Path = THROUGHPUT_CSV) -> list[Measurement]:
    """Every throughput.csv row as a Measurement (excluded rows carry their reason)."""
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    accelerators = load_accelerators()
    parsed = (measurement_for(i, row, rows, accelerators) for i, row in enumerate(rows, 1))
    return [m for m in parsed if m is not None]


# The vendors a throughput.csv device text names (estimator.api's Device.vendor values).
DEVICE_VENDORS = ("nvidia", "amd", "apple", "intel")


def device_vendor(device_name: str) -> str:
    """The vendor a throughput.csv device names ("NVIDIA GeForce RTX 4090" -> "nvidia",
    "2x AMD Radeon ..." -> "amd"); "other" when the text names none of DEVICE_VENDORS."""
    lowered = device_name.lower()
    return next((v for v in DEVICE_VENDORS if re.search(rf"\b{v}\b", lowered)), "other")


def measured_vendors(
    measurements: Iterable[Measurement], key_of: Callable[[Measurement], str]
) -> dict[str, list[str]]:
    """Each group's vendors (device_vendor) of the rows `key_of` puts in it, sorted: a
    group backs a speed only on hardware of these vendors (speed.measured_group)."""
    found: dict[str, set[str]] = {}
    for m in measurements:
        found.setdefault(key_of(m), set()).add(device_vendor(m.device_name))
    return {key: sorted(vendors) for key, vendors in found.items()}
