"""serving.csv rows ready for the batched serving model (estimator.serving): the device,
weights and KV cache each row names, the batch it ran at, the figure it measured (mean
TPOT or aggregate output tokens/s) and why it is kept out of the fit, if it is.
calibration.serving fits and holds out the factors on them.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from estimator import kv as kvmod
from estimator.api import RequestError, estimate
from estimator.api.speeds import model_work
from estimator.calibration.models import config_text, model_spec
from estimator.calibration.rows import (
    ACCELERATORS_CSV,
    Accelerator,
    engine_version,
    legacy_build,
    load_accelerators,
)
from estimator.serving import (
    CycleWork,
    ServingFactors,
    StepInputs,
    compute_precision,
    cycle_work,
    hardware_class,
    kv_admission_sequences,
)
from estimator.speed import Device, Parallelism, device_class_for
from estimator.weights import WeightsFormat, weights_breakdown

if TYPE_CHECKING:
    from estimator.model import ModelSpec

DATA = Path(__file__).resolve().parent.parent / "data"
SERVING_CSV = DATA / "validation" / "serving.csv"


# serving.csv device text (lower case, first match wins) -> accelerators.csv name. A
# datacenter part whose form factor the source does not state is taken as the SXM / OAM
# board (serving benchmarks at TP 2-8 run on HGX / OAM nodes; noted per row in the CSV).
DEVICE_PATTERNS: tuple[tuple[str, str], ...] = (
    ("gh200", "GH200 (Grace Hopper, 96GB HBM3)"),
    ("h200 131gb", "H200 SXM 141GB"),
    ("h200 nvl", "H200 NVL 141GB"),
    ("h200", "H200 SXM 141GB"),
    ("h100 nvl", "H100 NVL 94GB"),
    ("h100 pcie", "H100 PCIe 80GB"),
    ("h100", "H100 SXM5 80GB"),
    ("h800", "H800 SXM5"),
    ("h20", "H20"),
    ("gb200", "GB200 (per Blackwell GPU in GB200 NVL72)"),
    ("b300", "B300 (HGX B300 / Blackwell Ultra)"),
    ("b200", "B200 (HGX/DGX B200)"),
    ("a100 40gb pcie", "A100 40GB PCIe"),
    ("a100 80gb pcie", "A100 80GB PCIe"),
    ("a100 pcie", "A100 80GB PCIe"),
    ("a100 40gb", "A100 40GB SXM4"),
    ("a100", "A100 80GB SXM4"),
    ("l40s", "L40S"),
    ("l40", "L40S"),
    ("l4", "L4"),
    ("a40", "A40"),
    # the Server Edition has the same GB202 chip and 96 GB GDDR7 as the Workstation Edition
    ("rtx pro 6000", "RTX PRO 6000 Blackwell (Workstation Edition)"),
    ("rtx 6000 pro", "RTX PRO 6000 Blackwell (Workstation Edition)"),
    ("rtx 6000 ada", "RTX 6000 Ada Generation"),
    ("rtx 4090", "GeForce RTX 4090"),
    ("rtx 5090", "GeForce RTX 5090"),
    ("rtx 3090", "GeForce RTX 3090"),
    ("mi355x", "Instinct MI355X"),
    ("mi325x", "Instinct MI325X"),
    ("mi300x", "Instinct MI300X"),
    ("mi250", "Instinct MI250X"),
    ("gaudi 3", "Gaudi 3"),
    ("gaudi 2", "Gaudi 2"),
)


# Dense FP4 tensor rates (TFLOPS) of the devices that have one; accelerators.csv has no
# FP4 column. Each with its source (the catalog's fp4_tflops carries the same):
FP4_TFLOPS = {
    # glennklockwood.com/garden/processors/B200, HGX table: 9,000 dense, 18,000 sparse
    "B200 (HGX/DGX B200)": 9000.0,
    # tomshardware.com, "Nvidia shares Blackwell Ultra's secrets" (Hot Chips 2025): 15 PF
    # NVFP4 dense per package
    "B300 (HGX B300 / Blackwell Ultra)": 15000.0,
    # glennklockwood.com/garden/processors/B200, GB200 table: 10,000 dense per GPU
    "GB200 (per Blackwell GPU in GB200 NVL72)": 10000.0,
    # hmc-tech.com RTX PRO 6000 Blackwell spec table: 2.02 PF FP4 tensor, 4.03 sparse
    "RTX PRO 6000 Blackwell (Workstation Edition)": 2015.0,
    # NVIDIA's 3,352 AI TOPS (FP4, sparse) for the RTX 5090, halved
    "GeForce RTX 5090": 1676.0,
}


# serving.csv weights_precision -> the estimator's HF dtype.
PRECISION_DTYPES = {
    "bf16": "bf16",
    "fp16": "bf16",
    "fp8": "fp8",
    "int4-awq": "awq-int4",
    "awq": "awq-int4",
    "int4-gptq": "gptq-int4",
    "gptq": "gptq-int4",
    "w4a16": "awq-int4",
    "int8": "w8a8",
    "w8a8": "w8a8",
    "mxfp4": "mxfp4",
    "nvfp4": "nvfp4",
}


# The most sequences an engine batches when nothing else limits it: vLLM's and SGLang's
# max_num_seqs / max_running_requests on 80 GB-class GPUs (1024, memory.VLLM_MAX_NUM_SEQS),
# trtllm-bench's max_batch_size heuristic (up to 2048 for short sequences).
ENGINE_MAX_SEQS = {"vllm": 1024, "sglang": 1024, "tensorrt-llm": 2048}


# Rows generating fewer tokens per request measure prefill, not generation: their "output
# tokens/s" (4 tokens after a 128-token prompt) is a prompt rate in disguise.
MIN_OUTPUT_TOKENS = 16


@dataclass(frozen=True)
class ServingRow:
    """One usable serving.csv row, ready for serving.closed_loop_point."""

    index: int  # data row number (1 = first row after the header)
    engine: str
    source: str
    model: str
    device_name: str
    inputs: StepInputs
    batch: int
    prompt_tokens: int
    output_tokens: int
    measured: float  # per-user tokens/s (from TPOT) or aggregate output tokens/s
    metric: str  # "tpot" | "output_tps"
    legacy: bool
    excluded: str = ""  # why the row is not fitted, "" if it is
    arrival_rate_per_s: float = 0.0  # open-loop rows: requests/s; the batch follows from it
    weight: float = 1.0  # 1 / sqrt(rows of its source): no publication outweighs the rest
    hardware: str = ""  # serving.hardware_class of the device
    cycle: CycleWork | None = None  # closed-loop rows: the cycle's work, built once
    chunk_tokens: int = 8192  # the engine's prefill chunk (max_num_batched_tokens)
    # open-loop rows: the cycle's work at each (hardware class factor, batch) the fit has
    # asked for; the work does not depend on the engine factors, so a grid search builds it
    # once per batch (shared with the row's with_class copies, hence the factor in the key)
    batch_work: dict[tuple[float, int], CycleWork] = field(
        default_factory=dict, compare=False, repr=False
    )


def _float(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def device_name_for(text: str) -> str | None:
    """The accelerators.csv name of a serving.csv device (DEVICE_PATTERNS)."""
    lowered = text.lower()
    return next((name for key, name in DEVICE_PATTERNS if key in lowered), None)


def speed_device(name: str, spec: Accelerator) -> Device:
    return Device(
        spec.bandwidth_gbps,
        spec.fp16_tflops,
        device_class_for(name, spec.bandwidth_gbps),
        spec.architecture,
        fp8_tflops=spec.fp8_tflops,
        fp4_tflops=FP4_TFLOPS.get(name),
        int8_tops=spec.int8_tops,
    )


def _parallelism(spec: Accelerator, tp: int) -> Parallelism:
    if tp <= 1:
        return Parallelism()
    return Parallelism(n_devices=tp, mode="tensor", interconnect_gbps=spec.link_gbps or 25.0)


def _memory_gb() -> dict[str, float]:
    with ACCELERATORS_CSV.open(newline="", encoding="utf-8") as handle:
        return {r["name"]: float(r["memory_gb"]) for r in csv.DictReader(handle) if r["memory_gb"]}


_MEMORY_GB = _memory_gb()


@cache
def kv_capacity_tokens(
    model: str, dtype: str, kv_dtype: str, device: str, tp: int, engine: str, context: int
) -> int | None:
    """The KV pool in tokens the estimator gives this setup (estimator.api.estimate, the
    product's own memory model); None when it does not fit or is refused."""
    spec = load_accelerators()[device]
    text = config_text(model)
    if text is None or device not in _MEMORY_GB:
        return None
    request = {
        "model": {"hf_config": json.loads(text)},
        "weights": {"format": "hf", "dtype": dtype},
        "device": {
            "memory_gb": _MEMORY_GB[device],
            "bandwidth_gbps": spec.bandwidth_gbps,
            "fp16_tflops": spec.fp16_tflops,
            "count": tp,
            "interconnect_gbps": spec.link_gbps or 25.0,
            "name": device,
        },
        "engine": {"name": engine},
        "workload": {
            "context_tokens": context,
            "tensor_parallel": tp,
            "kv_cache_dtype": kv_dtype,
            "prompt_tokens": 1,
            "output_tokens": 1,
        },
    }
    try:
        result = estimate(request)
    except RequestError:
        return None
    if result["fit"]["verdict"] == "does_not_fit":
        return None
    return int(result["kv_cache_capacity_tokens"])


def engine_defaults(engine: str, device: str) -> tuple[int, int]:
    """(max sequences, prefill chunk tokens) an engine runs with when the benchmark does
    not set them. vLLM V1 (vllm/engine/arg_utils.py, _set_default_args): 1024 sequences
    and 8192-token steps on GPUs with >= 70 GiB that are not A100s, else 256 and 2048
    (OpenAI server); SGLang and TensorRT-LLM as ENGINE_MAX_SEQS with 8192-token chunks."""
    if engine == "vllm" and (_MEMORY_GB.get(device, 0) < 75 or device.startswith("A100")):
        return 256, 2048
    return ENGINE_MAX_SEQS.get(engine, 1024), 8192


def _batch(raw: dict[str, str], engine: str, admission: int, max_seqs: int) -> tuple[int, float]:
    """(batch, arrival rate): the stated concurrency, else (all requests sent at once) the
    prompts, capped by the engine's max sequences and the KV admission; an open-loop row
    (a finite request rate and no concurrency) gets its batch from the rate (predicted)."""
    concurrency = _float(raw["concurrency"])
    rate = _float(raw["request_rate"]) if raw["request_rate"] not in ("", "inf") else None
    if concurrency:
        return max(1, min(int(concurrency), admission)), 0.0
    if rate:
        return admission, rate
    prompts = _float(raw["num_prompts"]) or 10**6
    return max(1, min(int(prompts), max_seqs, admission)), 0.0


# serving.csv model names that would match the wrong MODEL_CONFIGS key as substrings
# ("deepseek-r1" is also in "DeepSeek-R1-Distill-Qwen-14B", a Qwen model).
MODEL_ALIASES = {"deepseek-r1": "DeepSeek R1"}


# _row's StepInputs by (model name, weights dtype, compute precision, KV dtype, device,
# TP): what _step_inputs builds them from (model_spec is cached by the name, the device by
# its name in one accelerators dict), so rows of one setup share one, built once
InputsMemo = dict[tuple[str, str, str, str, str, int], StepInputs]


def _row(
    index: int,
    raw: dict[str, str],
    accelerators: dict[str, Accelerator],
    memo: InputsMemo | None = None,
) -> ServingRow | None:
    """One serving.csv row ready for the model, or None when its model has no config, its
    device is unknown, it states no tokens or speed, or the estimator gives no KV pool."""
    engine = raw["engine"].strip().lower()
    raw = {**raw, "model": MODEL_ALIASES.get(raw["model"].strip().lower(), raw["model"])}
    spec_model = model_spec(raw["model"])
    name = device_name_for(raw["device"])
    accel = accelerators.get(name) if name else None
    prompt = round(_float(raw["input_tokens"]) or 0)
    output = round(_float(raw["output_tokens"]) or 0)
    measure = _measured(raw)
    if spec_model is None or accel is None or name is None or output < 1 or prompt < 1:
        return None
    if measure is None:
        return None
    metric, measured = measure
    dtype, compute = _precision(raw)
    kv_dtype = "fp8" if "fp8" in raw.get("kv_dtype", "").lower() else "bf16"
    tp = int(_float(raw["tp"]) or _float(raw["n_devices"]) or 1)
    setup = (raw["model"], dtype, compute, kv_dtype, name, tp)
    inputs = memo.get(setup) if memo is not None else None
    if inputs is None:
        inputs = _step_inputs(spec_model, dtype, compute, kv_dtype, name, accel, tp)
        if memo is not None:
            memo[setup] = inputs
    kv_name = "fp8" if kv_dtype == "fp8" else "f16"
    context = max(4096, 1024 * math.ceil((prompt + output) / 1024))
    capacity = kv_capacity_tokens(raw["model"], dtype, kv_name, name, tp, engine, context)
    if capacity is None:
        return None
    admission = kv_admission_sequences(capacity, prompt, output, 10**6)
    max_seqs, chunk = engine_defaults(engine, name)
    batch, rate = _batch(raw, engine, admission, max_seqs)
    legacy = _legacy(engine, raw)
    return ServingRow(
        index=index,
        engine=engine,
        source=source_key(raw["source"]),
        model=raw["model"],
        device_name=name,
        inputs=inputs,
        batch=batch,
        prompt_tokens=prompt,
        output_tokens=output,
        measured=measured,
        metric=metric,
        legacy=legacy,
        excluded=_excluded(raw, legacy, output),
        arrival_rate_per_s=rate,
        chunk_tokens=chunk,
        hardware=hardware_class("", name),
    )


def _measured(raw: dict[str, str]) -> tuple[str, float] | None:
    """(metric, measured): per-user tokens/s from the mean (else median) TPOT, or the
    aggregate output tokens/s; None when the row states neither."""
    tpot = _float(raw["mean_tpot_ms"]) or _float(raw["median_tpot_ms"])
    out_tps = _float(raw["output_tps"])
    if tpot is None and out_tps is None:
        return None
    # All requests at once (no concurrency cap): the mean TPOT mixes a long prefill-bound
    # start with the drain, so the run's output tokens/s is the steady figure to compare.
    burst = not _float(raw["concurrency"]) and raw["request_rate"] in ("", "inf")
    if tpot and not (burst and out_tps):
        return "tpot", 1000.0 / tpot
    return "output_tps", out_tps or 0.0


def _precision(raw: dict[str, str]) -> tuple[str, str]:
    """(weights dtype, compute precision) of a row's weights_precision column."""
    precision = raw["weights_precision"].strip().lower()
    dtype = PRECISION_DTYPES.get(precision, "bf16")
    compute = compute_precision(dtype)
    if "gpt-oss" in raw["model"].lower():
        # gpt-oss ships MXFP4 experts only; an "FP8" column runs them with FP8 activations
        compute = "fp8" if precision == "fp8" else compute
        dtype = "mxfp4"
    return dtype, compute


def _step_inputs(
    model: ModelSpec,
    dtype: str,
    compute: str,
    kv_dtype: str,
    name: str,
    accel: Accelerator,
    tp: int,
) -> StepInputs:
    """The serving model's inputs for the row's model, weights, KV cache type and devices,
    with placeholder factors (the fit replaces them)."""
    wb = weights_breakdown(model, WeightsFormat("hf", dtype))
    work = model_work(model, wb, kvmod.kv_read_split(model, kv_dtype=kv_dtype))
    return StepInputs(
        work=work,
        device=speed_device(name, accel),
        parallelism=_parallelism(accel, tp),
        factors=ServingFactors("fit", 0.8, 0.6, 0.003),
        precision=compute,
        attention_width=model.n_heads * model.head_dim,
        kv_replicated=model.mla is not None,
        hardware=hardware_class("", name),
    )


def _legacy(engine: str, raw: dict[str, str]) -> bool:
    """Whether the row's engine build predates its current fast path (legacy_build)."""
    version_text = f"{engine} {raw['engine_version']}"
    if legacy_build(engine, "cuda", raw.get("date", ""), version_text):
        return True
    # no version stated, measured before vLLM 0.8 (V1) was released
    return (
        engine == "vllm"
        and engine_version(version_text) is None
        and raw.get("date", "") < "2025-03"
    )


def _excluded(raw: dict[str, str], legacy: bool, output: int) -> str:
    """Why the row is kept out of the fit, "" if it is fitted; where several reasons
    apply, the one checked first here is given."""
    notes = raw["notes"].lower()
    if int(_float(raw["n_devices"]) or 1) > 8:
        return "more than one 8-GPU node (inter-node links not modelled)"
    if any(word in notes for word in ("speculative", "eagle", "mtp")):
        return "speculative decoding (not modelled)"
    if output < MIN_OUTPUT_TOKENS:
        return "a prefill benchmark (output tokens/s of a few tokens per request)"
    if "pp=" in notes or ",pp" in notes:
        return "pipeline parallel (not modelled)"
    return "engine build before its current fast path" if legacy else ""


def source_key(text: str) -> str:
    """The publication a row comes from, for holding sources out: a GitHub repository
    ("gpustack/gpustack", "nvidia/tensorrt-llm") or a web site ("amd.com",
    "yobitelcomm.github.io")."""
    lowered = text.strip().lower()
    for prefix in ("https://", "http://", "www.", "github.com/", "github "):
        lowered = lowered.removeprefix(prefix)
    first = re.split(r"[\s,(@]", lowered, maxsplit=1)[0]
    parts = first.split("/")
    if len(parts) >= 2 and "." not in parts[0]:
        return f"{parts[0]}/{parts[1]}"
    host = parts[0]
    keep = 3 if host.endswith("github.io") else 2
    return ".".join(host.split(".")[-keep:])


def load_rows(path: Path = SERVING_CSV) -> tuple[list[ServingRow], list[tuple[int, str]]]:
    """The usable rows, and (row number, reason) for each row that cannot be predicted."""
    accelerators = load_accelerators()
    rows, skipped = [], []
    memo: InputsMemo = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for index, raw in enumerate(csv.DictReader(handle), start=1):
            row = _row(index, raw, accelerators, memo)
            if row is None:
                skipped.append((index, f"{raw['model']} on {raw['device']}: no config/device"))
            else:
                rows.append(row)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.source] = counts.get(row.source, 0) + 1
    rows = [replace(r, weight=1 / math.sqrt(counts[r.source]), cycle=_cycle(r)) for r in rows]
    return rows, skipped


def _cycle(row: ServingRow) -> CycleWork | None:
    if row.arrival_rate_per_s:
        return None
    return cycle_work(
        row.inputs,
        batch=row.batch,
        prompt_tokens=row.prompt_tokens,
        output_tokens=row.output_tokens,
        chunk_tokens=row.chunk_tokens,
    )
