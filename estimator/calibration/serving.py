"""Fit and hold out the batched serving model (estimator.serving) on serving.csv.

`python -m estimator.calibration.serving` reads `data/validation/serving.csv` (published
vLLM, SGLang and TensorRT-LLM serving results, each row with its source), predicts each
row with `serving.closed_loop_point`, fits the factors per engine family by grid search
on the squared log ratio, holds out whole sources (every row of one publication is
predicted by a fit on the others), and writes `data/serving_calibration.json`.

Rows compare like with like: a row with a mean TPOT is compared with the predicted TPOT
(1 / per-user speed); a row with only an aggregate output tokens/s with the predicted
batch x output / (TTFT + (output - 1) x TPOT). Rows of engine builds older than their
current fast path (calibration.rows.legacy_build) are kept out of the fit and reported
apart, and so are rows whose model has no config or whose device is unknown.
"""

from __future__ import annotations

import csv
import json
import math
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

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
    MEASURED_CLASSES,
    SERVING_CALIBRATION_JSON,
    CycleWork,
    ServingFactors,
    StepInputs,
    closed_loop_point,
    compute_precision,
    cycle_point,
    cycle_work,
    hardware_class,
    kv_admission_sequences,
)
from estimator.speed import Device, Parallelism, device_class_for
from estimator.weights import WeightsFormat, weights_breakdown

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
CLASS_MIN_ROWS = 15  # a hardware class gets its own compute factor from this many rows
CLASS_FACTORS = [0.3 + 0.05 * i for i in range(25)]  # 0.3 .. 1.5
FAMILY_MIN_ROWS = 8  # an engine family gets its own factors from this many fitted rows on
FAMILY_MIN_SOURCES = 2  # at least this many sources; else it takes the pooled factors
GRID = {  # shares: multipliers of the hardware's measured ones (serving.HARDWARE_EFFICIENCY)
    "bandwidth_share": [0.6 + 0.025 * i for i in range(25)],  # 0.6 .. 1.2
    "compute_share": [0.3 + 0.025 * i for i in range(41)],  # 0.3 .. 1.3
    "step_overhead_s": [0.0005 * i for i in range(25)],  # 0 .. 12 ms per 32 layers
    "moe_step_overhead_s": [0.0005 * i for i in range(17)],  # 0 .. 8 ms
    "sequence_overhead_s": [5e-6 * i for i in range(17)],  # 0 .. 80 us per sequence
    "moe_compute_share": [0.05 + 0.025 * i for i in range(47)],  # 0.05 .. 1.2
}
MOE_ONLY = ("moe_step_overhead_s", "moe_compute_share")


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


def _row(
    index: int, raw: dict[str, str], accelerators: dict[str, Accelerator]
) -> ServingRow | None:
    engine = raw["engine"].strip().lower()
    raw = {**raw, "model": MODEL_ALIASES.get(raw["model"].strip().lower(), raw["model"])}
    spec_model = model_spec(raw["model"])
    name = device_name_for(raw["device"])
    accel = accelerators.get(name) if name else None
    prompt = round(_float(raw["input_tokens"]) or 0)
    output = round(_float(raw["output_tokens"]) or 0)
    tpot = _float(raw["mean_tpot_ms"]) or _float(raw["median_tpot_ms"])
    out_tps = _float(raw["output_tps"])
    if spec_model is None or accel is None or name is None or output < 1 or prompt < 1:
        return None
    if tpot is None and out_tps is None:
        return None
    precision = raw["weights_precision"].strip().lower()
    dtype = PRECISION_DTYPES.get(precision, "bf16")
    compute = compute_precision(dtype)
    if "gpt-oss" in raw["model"].lower():
        # gpt-oss ships MXFP4 experts only; an "FP8" column runs them with FP8 activations
        compute = "fp8" if precision == "fp8" else compute
        dtype = "mxfp4"
    wb = weights_breakdown(spec_model, WeightsFormat("hf", dtype))
    kv_dtype = "fp8" if "fp8" in raw.get("kv_dtype", "").lower() else "bf16"
    work = model_work(spec_model, wb, kvmod.kv_read_split(spec_model, kv_dtype=kv_dtype))
    tp = int(_float(raw["tp"]) or _float(raw["n_devices"]) or 1)
    kv_name = "fp8" if kv_dtype == "fp8" else "f16"
    context = max(4096, 1024 * math.ceil((prompt + output) / 1024))
    capacity = kv_capacity_tokens(raw["model"], dtype, kv_name, name, tp, engine, context)
    if capacity is None:
        return None
    admission = kv_admission_sequences(capacity, prompt, output, 10**6)
    max_seqs, chunk = engine_defaults(engine, name)
    batch, rate = _batch(raw, engine, admission, max_seqs)
    inputs = StepInputs(
        work=work,
        device=speed_device(name, accel),
        parallelism=_parallelism(accel, tp),
        factors=ServingFactors("fit", 0.8, 0.6, 0.003),
        precision=compute,
        attention_width=spec_model.n_heads * spec_model.head_dim,
        kv_replicated=spec_model.mla is not None,
        hardware=hardware_class("", name),
    )
    # All requests at once (no concurrency cap): the mean TPOT mixes a long prefill-bound
    # start with the drain, so the run's output tokens/s is the steady figure to compare.
    burst = not _float(raw["concurrency"]) and raw["request_rate"] in ("", "inf")
    if tpot and not (burst and out_tps):
        metric, measured = "tpot", 1000.0 / tpot
    else:
        metric, measured = "output_tps", out_tps or 0.0
    version_text = f"{engine} {raw['engine_version']}"
    legacy = legacy_build(engine, "cuda", raw.get("date", ""), version_text)
    if (
        engine == "vllm"
        and engine_version(version_text) is None
        and raw.get("date", "") < "2025-03"
    ):
        legacy = True  # no version stated, measured before vLLM 0.8 (V1) was released
    excluded = "engine build before its current fast path" if legacy else ""
    if "pp=" in raw["notes"].lower() or ",pp" in raw["notes"].lower():
        excluded = "pipeline parallel (not modelled)"
    if output < MIN_OUTPUT_TOKENS:
        excluded = "a prefill benchmark (output tokens/s of a few tokens per request)"
    if any(word in raw["notes"].lower() for word in ("speculative", "eagle", "mtp")):
        excluded = "speculative decoding (not modelled)"
    if int(_float(raw["n_devices"]) or 1) > 8:
        excluded = "more than one 8-GPU node (inter-node links not modelled)"
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
        excluded=excluded,
        arrival_rate_per_s=rate,
        chunk_tokens=chunk,
        hardware=hardware_class("", name),
    )


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
    with path.open(newline="", encoding="utf-8") as handle:
        for index, raw in enumerate(csv.DictReader(handle), start=1):
            row = _row(index, raw, accelerators)
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


def predicted(row: ServingRow, factors: ServingFactors) -> float:
    """The row's metric as the model predicts it with `factors`."""
    if row.cycle is not None:
        point = cycle_point(row.cycle, factors)
        return point.per_user_tokens_per_s if row.metric == "tpot" else point.aggregate_tokens_per_s
    inputs = replace(row.inputs, factors=factors)
    batch = row.batch
    if row.arrival_rate_per_s:  # Little's law: in flight = rate x (TTFT + (out - 1) TPOT)
        guess = 1.0
        for _ in range(30):
            point = closed_loop_point(
                inputs,
                batch=max(1, round(guess)),
                prompt_tokens=row.prompt_tokens,
                output_tokens=row.output_tokens,
                chunk_tokens=row.chunk_tokens,
            )
            guess = min(float(row.batch), row.arrival_rate_per_s * point.cycle_s)
        batch = max(1, round(guess))
    point = closed_loop_point(
        inputs,
        batch=batch,
        prompt_tokens=row.prompt_tokens,
        output_tokens=row.output_tokens,
        chunk_tokens=row.chunk_tokens,
    )
    if row.metric == "tpot":
        return point.per_user_tokens_per_s
    return point.aggregate_tokens_per_s


def _row_loss(row: ServingRow, factors: ServingFactors) -> float:
    err = math.log(row.measured / predicted(row, factors))
    # Huber: an outlier's pull grows linearly, not quadratically
    return row.weight * (err * err if abs(err) < 0.5 else abs(err) - 0.25)


def _loss(rows: Sequence[ServingRow], factors: ServingFactors) -> float:
    return sum(_row_loss(row, factors) for row in rows)


def _with(factors: ServingFactors, name: str, value: float) -> ServingFactors:
    """factors with one fitted field replaced (dataclasses.replace, typed for mypy)."""
    changed: ServingFactors = replace(factors, **{name: value})  # type: ignore[arg-type]
    return changed


def _coordinate_search(
    rows: Sequence[ServingRow], start: ServingFactors, rounds: int = 3
) -> ServingFactors:
    """Coordinate descent over GRID: each factor in turn takes its best grid value."""
    best = start
    moe = any(r.inputs.work.is_moe for r in rows)
    for _ in range(rounds):
        for name, values in GRID.items():
            if name in MOE_ONLY and not moe:
                continue
            scored = [(_loss(rows, _with(best, name, v)), v) for v in values]
            best = _with(best, name, min(scored)[1])
    return best


POOLED_START = ServingFactors("serving", 1.0, 1.0, 0.003, 0.001, moe_compute_share=0.5)


def fit_groups(rows: Sequence[ServingRow]) -> dict[str, ServingFactors]:
    """Pooled factors on every fitted row, then per engine family where it has
    FAMILY_MIN_ROWS rows from FAMILY_MIN_SOURCES sources (started from the pooled fit)."""
    fitted = [r for r in rows if not r.excluded]
    pooled = replace(_coordinate_search(fitted, POOLED_START), group="serving", rows=len(fitted))
    groups = {"serving": pooled}
    for engine in sorted({r.engine for r in fitted}):
        mine = [r for r in fitted if r.engine == engine]
        if len(mine) >= FAMILY_MIN_ROWS and len({r.source for r in mine}) >= FAMILY_MIN_SOURCES:
            own = _coordinate_search(mine, pooled, rounds=2)
            groups[engine] = replace(own, group=engine, rows=len(mine))
    return groups


def factors_for(engine: str, groups: dict[str, ServingFactors]) -> ServingFactors:
    return groups.get(engine, groups["serving"])


def with_class(row: ServingRow, factor: float) -> ServingRow:
    cycle = row.cycle
    if cycle is not None:
        cycle = replace(
            cycle,
            heavy=replace(cycle.heavy, compute_factor=factor),
            light=replace(cycle.light, compute_factor=factor),
        )
    return replace(row, inputs=replace(row.inputs, compute_factor=factor), cycle=cycle)


def fit_classes(rows: Sequence[ServingRow], groups: dict[str, ServingFactors]) -> dict[str, float]:
    """One compute multiplier per hardware class without measured tables
    (serving.MEASURED_CLASSES) that has CLASS_MIN_ROWS fitted rows (the engine factors
    held fixed); the others stay at 1."""
    fitted = [r for r in rows if not r.excluded]
    out = {}
    unmeasured = {r.hardware for r in fitted if r.hardware not in MEASURED_CLASSES}
    for hardware in sorted(unmeasured - {""}):
        mine = [r for r in fitted if r.hardware == hardware]
        if len(mine) < CLASS_MIN_ROWS:
            continue
        scored = [
            (sum(_row_loss(with_class(r, f), factors_for(r.engine, groups)) for r in mine), f)
            for f in CLASS_FACTORS
        ]
        out[hardware] = min(scored)[1]
    return out


def fit_all(rows: Sequence[ServingRow]) -> tuple[dict[str, ServingFactors], dict[str, float]]:
    """Engine factors on the rows of hardware with measured tables
    (serving.MEASURED_CLASSES: what the hardware reaches is known there, so what is left is
    the engine's), then a compute factor for each other hardware class with the engine
    factors held (AMD's GEMM efficiency lands in its class, not in vLLM's factors)."""
    measured = [r for r in rows if r.hardware in MEASURED_CLASSES]
    groups = fit_groups(measured or rows)
    return groups, fit_classes(rows, groups)


def apply_class(row: ServingRow, classes: dict[str, float]) -> ServingRow:
    return with_class(row, classes.get(row.hardware, 1.0))


def predict_with(
    row: ServingRow, groups: dict[str, ServingFactors], classes: dict[str, float]
) -> float:
    return predicted(apply_class(row, classes), factors_for(row.engine, groups))


def holdout(
    rows: Sequence[ServingRow], key: Callable[[ServingRow], str]
) -> list[tuple[ServingRow, float]]:
    """(row, prediction by a fit without the row's group) for every fitted row."""
    fitted = [r for r in rows if not r.excluded]
    out = []
    for value in sorted({key(r) for r in fitted}):
        groups, classes = fit_all([r for r in fitted if key(r) != value])
        out += [(r, predict_with(r, groups, classes)) for r in fitted if key(r) == value]
    return out


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def stats(pairs: Iterable[tuple[ServingRow, float]]) -> dict[str, Any]:
    """Median and p90 of |measured / predicted - 1|, the median bias (measured / predicted
    - 1), ratio quantiles, and the same per engine."""
    pairs = list(pairs)
    if not pairs:
        return {"rows": 0}
    ratios = [r.measured / p for r, p in pairs]
    errors = [abs(x - 1) for x in ratios]
    out: dict[str, Any] = {
        "rows": len(pairs),
        "median_error": round(statistics.median(errors), 4),
        "p90_error": round(_quantile(errors, 0.9), 4),
        "median_bias": round(statistics.median(ratios) - 1, 4),
        "ratio_p10": round(_quantile(ratios, 0.1), 4),
        "ratio_p90": round(_quantile(ratios, 0.9), 4),
        "within_25_percent": round(sum(e <= 0.25 for e in errors) / len(errors), 4),
    }
    engines = sorted({r.engine for r, _ in pairs})
    if len(engines) > 1:
        out["by_engine"] = {e: stats([(r, p) for r, p in pairs if r.engine == e]) for e in engines}
    return out


def _entry(f: ServingFactors, low: float, high: float) -> dict[str, Any]:
    return {
        "bandwidth_share": round(f.bandwidth_share, 4),
        "compute_share": round(f.compute_share, 4),
        "step_overhead_s": round(f.step_overhead_s, 6),
        "moe_step_overhead_s": round(f.moe_step_overhead_s, 6),
        "sequence_overhead_s": round(f.sequence_overhead_s, 7),
        "moe_compute_share": round(f.moe_compute_share or f.compute_share, 4),
        "ratio_low": round(low, 4),
        "ratio_high": round(high, 4),
        "rows": f.rows,
    }


def build() -> dict[str, Any]:
    """The whole serving_calibration.json."""
    rows, skipped = load_rows()
    groups, classes = fit_all(rows)
    by_source = holdout(rows, lambda r: r.source)
    by_device = holdout(rows, lambda r: r.device_name)
    by_model = holdout(rows, lambda r: r.model.lower())
    fitted = [r for r in rows if not r.excluded]
    in_sample = [(r, predict_with(r, groups, classes)) for r in fitted]
    legacy = [(r, predict_with(r, groups, classes)) for r in rows if r.excluded]
    entries = {}
    for key, factors in groups.items():
        # bounds from whole devices held out, as the single-stream model's: holding out a
        # source leaves TensorRT-LLM without its own factors (nearly all its rows are
        # NVIDIA's tables), which says more about the data than about a new device
        ratios = [r.measured / p for r, p in by_device if key in ("serving", r.engine)]
        low = _quantile(ratios, 0.1) if len(ratios) >= 5 else 0.7
        high = _quantile(ratios, 0.9) if len(ratios) >= 5 else 1.3
        entries[key] = _entry(factors, min(low, 0.95), max(high, 1.05))
        # the same factors stand for the engine on CUDA, where its rows were measured
        if key != "serving":
            entries[f"{key}/cuda"] = entries[key]
    return {
        "generated_by": "python -m estimator.calibration.serving",
        "source": "estimator/data/validation/serving.csv",
        "formulas": "estimator/serving.py module docstring; docs/estimator.md, Batched serving",
        "groups": entries,
        "hardware_classes": {
            k: {"compute_factor": round(v, 3), "rows": sum(r.hardware == k for r in fitted)}
            for k, v in classes.items()
        },
        "holdout_by_source": stats(by_source),
        "holdout_by_device": stats(by_device),
        "holdout_by_model": stats(by_model),
        "in_sample": stats(in_sample),
        "legacy_builds": stats(legacy),
        "rows_fitted": len(fitted),
        "rows_skipped": [f"row {i}: {why}" for i, why in skipped],
    }


def main() -> None:
    data = build()
    SERVING_CALIBRATION_JSON.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    for name in ("holdout_by_source", "holdout_by_device", "holdout_by_model", "in_sample"):
        print(name, json.dumps({k: v for k, v in data[name].items() if k != "by_engine"}))
        for engine, s in data[name].get("by_engine", {}).items():
            print("   ", engine, json.dumps(s))


if __name__ == "__main__":
    main()
