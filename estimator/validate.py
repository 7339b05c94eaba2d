"""Accuracy report: the public estimate path against the published measurements.

`python -m estimator.validate [--json]` builds one public request per measurement in
estimator/data/validation/ (config from calibration/models.py's MODEL_CONFIGS), runs
`estimator.api.estimate`, and compares one figure of the result with the measurement:

- gguf_sizes.csv        -> weights_bytes vs the Hugging Face file size (decimal GB)
- llamacpp_memory.csv   -> kv_cache_bytes and overhead_breakdown.compute_buffer (MiB)
- vllm_memory.csv       -> per_device_weights_bytes (GiB) and kv_cache_capacity_tokens
- throughput.csv        -> decode_tokens_per_s (or the aggregate for batched rows) and
                           prefill_tokens_per_s, including whether it lies in [low, high]

Rows whose model has no config, or whose engine/quant the estimator does not model, are
counted as skipped. The process always exits 0; misses against the targets are marked.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from estimator.api import RequestError, estimate
from estimator.calibration import models as calibration_models
from estimator.calibration.fit import quantile
from estimator.calibration.rows import (
    DEVICE_ALIASES,
    engine_of,
    exclusion_reason,
    load_accelerators,
    parse_test,
    split_device,
)
from estimator.factors import load_calibration
from estimator.speed import normalize_backend
from estimator.units import GB, GIB, MIB

DATA = Path(__file__).resolve().parent / "data" / "validation"
BIG_DEVICE_GB = 100_000.0  # memory for speed/size rows, so fit never limits them


@dataclass(frozen=True)
class Target:
    median_pct: float | None = None
    p90_pct: float | None = None
    max_pct: float | None = None
    inside_share: float | None = None
    median_high_over_low: float | None = None


@dataclass
class Metric:
    """Errors of one figure on one data set; `misses` lists the targets not met."""

    dataset: str
    figure: str
    target: Target
    errors_pct: list[float] = field(default_factory=list)
    inside: list[bool] = field(default_factory=list)
    high_over_low: list[float] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def add(
        self, predicted: float, measured: float, low: float | None = None, high: float | None = None
    ) -> None:
        """Absolute percentage error |predicted - measured| / measured x 100."""
        self.errors_pct.append(abs(predicted - measured) / measured * 100)
        if low is not None and high is not None:
            self.inside.append(low <= measured <= high)
            self.high_over_low.append(high / low if low > 0 else math.inf)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def summary(self) -> dict[str, Any]:
        errors = sorted(self.errors_pct)
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "figure": self.figure,
            "count": len(errors),
            "skipped": sum(self.skipped.values()),
            "skipped_reasons": dict(self.skipped),
            "median_pct": statistics.median(errors) if errors else None,
            "p90_pct": quantile(errors, 0.9) if errors else None,
            "max_pct": errors[-1] if errors else None,
            "inside_share": sum(self.inside) / len(self.inside) if self.inside else None,
            "median_high_over_low": statistics.median(self.high_over_low)
            if self.high_over_low
            else None,
            "target": {k: v for k, v in asdict(self.target).items() if v is not None},
        }
        out["misses"] = misses(out, self.target)
        return out


def misses(summary: dict[str, Any], target: Target) -> list[str]:
    """Names of the targets the summary does not meet (empty: all met)."""
    out = []
    for key, limit, better in (
        ("median_pct", target.median_pct, "below"),
        ("p90_pct", target.p90_pct, "below"),
        ("max_pct", target.max_pct, "below"),
        ("inside_share", target.inside_share, "above"),
        ("median_high_over_low", target.median_high_over_low, "below"),
    ):
        value = summary[key]
        if limit is None:
            continue
        if value is None or (value > limit if better == "below" else value < limit):
            out.append(key)
    return out


def read_csv(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def rebuilt_config(name: str) -> dict[str, Any]:
    """A config.json dict rebuilt from a model_configs.csv row (model.csv_configs)."""
    return calibration_models.rebuilt_config(name)


def config_for(model_name: str) -> str | None:
    """The config.json (as JSON text) standing in for a data set's model name."""
    return calibration_models.config_text(model_name)


def base_request(config_text: str, weights: dict[str, Any], **sections: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": {"hf_config": json.loads(config_text)},
        "weights": weights,
        "device": {"memory_gb": BIG_DEVICE_GB, "bandwidth_gbps": 1000.0},
    }
    request.update(sections)
    return request


def run(metric: Metric, request: dict[str, Any]) -> dict[str, Any] | None:
    """estimate(request), or None after counting the RequestError as a skip reason."""
    try:
        return estimate(request)
    except RequestError as exc:
        metric.skip(f"estimator refused: {exc.field}")
        return None


def gguf_request(row: dict[str, str]) -> tuple[dict[str, Any], float] | str:
    """(request, measured file bytes) for a gguf_sizes.csv row, or why it is left out."""
    config = config_for(row["model"])
    notes = row["notes"]
    if config is None:
        return "no config for the model"
    if "BEFORE the MoE-specific quant rules" in notes:
        return "file predates llama.cpp's MoE quant rules"
    imatrix = "static" not in notes.lower()
    weights = {"format": "gguf", "quant": row["quant"], "imatrix": imatrix}
    return base_request(config, weights), float(row["file_size_gb"]) * GB


def validate_gguf_sizes() -> list[Metric]:
    """weights_bytes of each GGUF file type vs the Hugging Face listing (decimal GB, three
    significant figures, so +-0.5 in the last digit is in the measurement)."""
    metric = Metric("gguf_sizes.csv", "weights_bytes", Target(median_pct=1.0, max_pct=3.0))
    for row in read_csv("gguf_sizes.csv"):
        built = gguf_request(row)
        if isinstance(built, str):
            metric.skip(built)
            continue
        request, measured = built
        result = run(metric, request)
        if result is not None:
            metric.add(result["weights_bytes"], measured)
    return [metric]


def ud_config_text(name: str) -> str:
    """gguf_sizes_ud.csv's `config` column: a config.json stem of CONFIG_DIRS or a
    model_configs.csv row name (rebuilt), as JSON text."""
    path = next(
        (p for d in calibration_models.CONFIG_DIRS if (p := d / f"{name}.json").exists()), None
    )
    if path is not None:
        return path.read_text(encoding="utf-8")
    return json.dumps(rebuilt_config(name))


def validate_gguf_sizes_ud() -> list[Metric]:
    """weights_bytes of the unsloth Dynamic (UD-*) types vs published sizes
    (gguf_sizes_ud.csv): the rows the recipes' scales were fitted on, and the held-out
    rows (older Llama 4 table, 2026 architectures). `basis` tensor_data rows are
    llama.cpp's tensor total (the file adds its few-MB header, inside the estimate)."""
    fit = Metric("gguf_sizes_ud.csv", "weights_bytes (UD, fitted rows)", Target(median_pct=1.0))
    held = Metric("gguf_sizes_ud.csv", "weights_bytes (UD, held-out rows)", Target())
    for row in read_csv("gguf_sizes_ud.csv"):
        metric = fit if row["group"] == "fit" else held
        if row["group"] == "excluded":
            metric.skip(row["notes"].split(";")[0])
            continue
        weights = {"format": "gguf", "quant": row["quant"]}
        result = run(metric, base_request(ud_config_text(row["config"]), weights))
        if result is not None:
            metric.add(result["weights_bytes"], float(row["file_size_gb"]) * GB)
    return [fit, held]


def mib(text: str) -> float:
    return float(text) * MIB


def busiest_compute_buffer(text: str) -> float | None:
    """Largest device compute buffer in 'CUDA0=17.14;CUDA_Host=17.14' (host copies left out,
    unless the run was CPU only)."""
    if not text:
        return None
    entries = {}
    for part in text.split(";"):
        if "=" in part:
            name, value = part.split("=", 1)
            try:
                entries[name.strip()] = float(value)
            except ValueError:
                continue
    devices = {k: v for k, v in entries.items() if not k.endswith("_Host") and k != "CPU"}
    chosen = devices or {k: v for k, v in entries.items() if k == "CPU"}
    return max(chosen.values()) * MIB if chosen else None


def _llama_kv_types(row: dict[str, str]) -> tuple[str, str | None, str | None]:
    """(type_k, type_v, mla_layout) from the log's type columns and MLA mode."""
    type_k = row["type_k"].replace("c^KV", "").strip() or "f16"
    type_v = row["type_v"].strip() or None
    mla = row["mla_attn"].strip()
    if row["arch"] != "deepseek2":
        return type_k, type_v, None
    if mla in ("2", "3") or row["type_k"].startswith("c^KV"):
        return type_k, None, "latent"
    if row["n_head_kv"] == "1":  # llama.cpp's MLA cache: latent K (576) plus V (512)
        return type_k, type_v, "latent_kv"
    return type_k, type_v, "full"


def llamacpp_request(row: dict[str, str]) -> dict[str, Any] | str:
    """The request for a llamacpp_memory.csv row (config by model, else by arch), or why
    there is none."""
    config = config_for(row["model"]) or config_for(row["arch"])
    if config is None:
        return "no config for the model"
    type_k, type_v, layout = _llama_kv_types(row)
    engine: dict[str, Any] = {
        "name": "llama.cpp",
        "n_ubatch": int(row["n_ubatch"] or 512),
        "flash_attention": row["flash_attn"] == "1",
        "type_k": type_k,
    }
    if type_v:
        engine["type_v"] = type_v
    if layout:
        engine["mla_layout"] = layout
    if row["n_swa"] not in ("", "0") and "ik_llama" in row["engine"]:
        engine["swa_full"] = True  # the fork caches every layer in full (no iSWA cache)
    n_ctx = int(row["n_ctx"])
    workload = {"context_tokens": n_ctx, "prompt_tokens": 0, "output_tokens": 1}
    return base_request(
        config, {"format": "gguf", "quant": "Q4_K_M"}, engine=engine, workload=workload
    )


def fully_placed(row: dict[str, str]) -> bool:
    """All layers on the devices (e.g. '62/62', or no offload column for CPU runs)."""
    done, _, total = row["layers_offloaded"].partition("/")
    return not total or done == total


def compute_buffer_exclusion(row: dict[str, str]) -> str:
    """Why the row's compute buffer is no measure of the estimator's (the data's
    exclude_compute_buffer column, e.g. ik_llama.cpp's -amb chunking of the KQ matrix,
    PR #237, which mainline llama.cpp lacks); "" when it is one."""
    return row.get("exclude_compute_buffer", "").strip()


def compute_buffer_measure(row: dict[str, str]) -> float | str:
    """The busiest device's compute buffer in bytes, or why the row gives no measure."""
    measured = busiest_compute_buffer(row["compute_buffers_mib"])
    if measured is None:
        return "no compute buffer in the log"
    if not fully_placed(row):
        return "partial offload stages weights in the compute buffer"
    return compute_buffer_exclusion(row) or measured


def validate_llamacpp_memory() -> list[Metric]:
    """kv_cache_bytes vs 'KV self size' and the compute buffer vs the busiest device's
    'compute buffer size' in llama.cpp (and ik_llama.cpp) load logs."""
    kv = Metric("llamacpp_memory.csv", "kv_cache_bytes", Target(max_pct=0.5))
    compute = Metric(
        "llamacpp_memory.csv", "overhead_breakdown.compute_buffer", Target(median_pct=15.0)
    )
    for row in read_csv("llamacpp_memory.csv"):
        request = llamacpp_request(row)
        if isinstance(request, str):
            kv.skip(request)
            compute.skip(request)
            continue
        result = run(kv, request)
        if result is None:
            compute.skip("estimator refused the request")
            continue
        kv.add(result["kv_cache_bytes"], mib(row["kv_total_mib"]))
        measured = compute_buffer_measure(row)
        if isinstance(measured, str):
            compute.skip(measured)
        else:
            compute.add(result["overhead_breakdown"]["compute_buffer"], measured)
    return [kv, compute]


VLLM_DTYPES = {
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "fp16": "fp16",
    "float32": "fp32",
}


def vllm_weights(row: dict[str, str]) -> dict[str, Any] | None:
    """The weights section for a vllm_memory.csv row, None for schemes not modelled."""
    quant = row["quantization"].lower()
    model = row["model"].lower()
    if not quant:
        dtype = VLLM_DTYPES.get(row["dtype"].lower())
        return None if dtype is None else {"format": "hf", "dtype": dtype}
    if "mxfp4" in quant:
        return {"format": "hf", "dtype": "mxfp4"}
    if quant.startswith("fp8"):
        return {"format": "hf", "dtype": "fp8"}
    if "gptq" in quant or "w4a16" in model:
        return {"format": "hf", "dtype": "gptq-int4"}
    if "w8a8" in model:
        return {"format": "hf", "dtype": "w8a8"}
    return None


def vllm_request(row: dict[str, str]) -> dict[str, Any] | str:
    """The request for a vllm_memory.csv row, or why there is none."""
    config = config_for(row["model"])
    weights = vllm_weights(row)
    if config is None:
        return "no config for the model"
    if weights is None:
        return "quantization scheme not modelled"
    if not row["total_gpu_memory_gib"] or not row["max_model_len"].isdigit():
        return "log lacks total memory or max_model_len"
    tp = int(row["tp"] or 1)
    pp = int(row["pp"] or 1)
    context = int(row["max_model_len"])
    # vLLM's kv_cache_dtype "auto" follows the model dtype (4 bytes for float32).
    kv_dtype = (
        "fp8"
        if row["kv_cache_dtype"].startswith("fp8")
        else ("f32" if weights.get("dtype") == "fp32" else "f16")
    )
    engine = {
        "name": "vllm",
        "gpu_memory_utilization": float(row["gpu_memory_utilization"]),
        "block_size": int(row["block_size"] or 16),
    }
    device = {
        "memory_gb": float(row["total_gpu_memory_gib"]) * GIB / GB,
        "bandwidth_gbps": 3350.0,
        "count": tp * pp,
    }
    workload = {
        "context_tokens": context,
        "tensor_parallel": tp,
        "kv_cache_dtype": kv_dtype,
        "prompt_tokens": 0,
        "output_tokens": 1,
    }
    request = base_request(config, weights, engine=engine, workload=workload)
    request["device"] = device
    return request


def vllm_kv_tokens(row: dict[str, str]) -> float | None:
    """The log's "GPU KV cache size" in tokens; None when it printed none (or failed)."""
    if row["kv_cache_tokens"] and row["status"].startswith("ok"):
        return float(row["kv_cache_tokens"])
    return None


def validate_vllm_memory() -> list[Metric]:
    """Per-rank weights ("Model loading took X GiB") and "GPU KV cache size" tokens."""
    weights_metric = Metric("vllm_memory.csv", "per_device_weights_bytes", Target(median_pct=3.0))
    tokens_metric = Metric(
        "vllm_memory.csv", "kv_cache_capacity_tokens", Target(median_pct=5.0, p90_pct=15.0)
    )
    for row in read_csv("vllm_memory.csv"):
        request = vllm_request(row)
        if isinstance(request, str):
            weights_metric.skip(request)
            tokens_metric.skip(request)
            continue
        result = run(weights_metric, request)
        if result is None:
            tokens_metric.skip("estimator refused the request")
            continue
        if row["weights_gib"]:
            weights_metric.add(result["per_device_weights_bytes"], float(row["weights_gib"]) * GIB)
        tokens = vllm_kv_tokens(row)
        if tokens is not None:
            tokens_metric.add(result["kv_cache_capacity_tokens"], tokens)
        else:
            tokens_metric.skip("no KV token count in the log")
    return [weights_metric, tokens_metric]


UD_BASE = {
    "UD-Q8_K_XL": "Q8_0",
    "UD-Q5_K_XL": "Q5_K_M",
    "UD-Q4_K_XL": "Q4_K_M",
    "UD-Q3_K_S": "Q3_K_S",
}
GGUF_LABELS = {
    "Q4_K_M": "Q4_K_M",
    "Q4_0": "Q4_0",
    "Q8_0": "Q8_0",
    "Q2_K": "Q2_K",
    "F16": "F16",
    "BF16": "BF16",
    "MXFP4 (MoE)": "MXFP4_MOE",
    "Q4_K_M GGUF (MXFP4 experts)": "Q4_K_M",
}
HF_LABELS = {"FP16": "fp16", "FP8": "fp8", "GPTQ 4-bit": "gptq-int4"}


def throughput_weights(row: dict[str, str], engine: str) -> dict[str, Any] | None:
    """Weights section for a throughput.csv quant label; Unsloth UD mixes use the measured
    file size on top of their base type."""
    label = row["quant"]
    if engine == "llama.cpp" and label in GGUF_LABELS:
        return {"format": "gguf", "quant": GGUF_LABELS[label]}
    if engine == "llama.cpp" and label in UD_BASE:
        weights: dict[str, Any] = {"format": "gguf", "quant": UD_BASE[label]}
        if row["file_size_gb"]:
            weights["file_bytes"] = round(float(row["file_size_gb"]) * GB)
        return weights
    if engine != "llama.cpp" and label in HF_LABELS:
        return {"format": "hf", "dtype": HF_LABELS[label]}
    return None


def _vendor(name: str) -> str:
    lowered = name.lower()
    for key, vendor in (
        ("apple", "apple"),
        ("amd", "amd"),
        ("radeon", "amd"),
        ("intel", "intel"),
        ("arc", "intel"),
    ):
        if key in lowered:
            return vendor
    return "nvidia"


def throughput_device(row: dict[str, str]) -> dict[str, Any]:
    count, name = split_device(row["device"])
    spec = _accelerators().get(DEVICE_ALIASES.get(name.lower(), name))
    bandwidth = (
        float(row["device_bw_gbps"])
        if row["device_bw_gbps"]
        else (spec.bandwidth_gbps if spec is not None else 0.0)
    )
    device: dict[str, Any] = {
        "memory_gb": BIG_DEVICE_GB,
        "name": name,
        "count": count,
        "bandwidth_gbps": bandwidth,
        "vendor": _vendor(name),
    }
    if spec is not None and spec.fp16_tflops:
        device["fp16_tflops"] = spec.fp16_tflops
    if spec is not None and spec.fp8_tflops:
        device["fp8_tflops"] = spec.fp8_tflops
    if spec is not None and spec.int8_tops:
        device["int8_tops"] = spec.int8_tops
    return device


@cache
def _accelerators() -> dict[str, Any]:
    return dict(load_accelerators())


def throughput_request(row: dict[str, str]) -> tuple[str, dict[str, Any]] | str:
    """(kind, request) for a throughput.csv row, or the reason it cannot be one."""
    config = config_for(row["model"])
    if config is None:
        return "no config for the model"
    engine = engine_of(row["backend"])
    if engine not in ("llama.cpp", "vllm", "tensorrt-llm"):
        return f"engine not modelled ({engine})"
    parsed = parse_test(row["test"], int(row["batch"] or 1))
    if parsed is None:
        return "test name not understood"
    kind, prompt, output = parsed
    if exclusion_reason(row, kind):
        return "flagged by the source"
    weights = throughput_weights(row, engine)
    if weights is None:
        return "quant not modelled"
    device = throughput_device(row)
    if kind == "prefill" and not device.get("fp16_tflops"):
        return "no TFLOPS figure for the device"
    tp = 1 if engine == "llama.cpp" else device["count"]
    backend = normalize_backend(row["backend"]) if engine == "llama.cpp" else "cuda"
    output = max(output, 1)
    workload = {
        "prompt_tokens": prompt,
        "output_tokens": output,
        "context_tokens": max(prompt + output, 512),
        "concurrent_sequences": int(row["batch"] or 1),
        "tensor_parallel": tp,
    }
    request = base_request(
        config, weights, engine={"name": engine, "backend": backend}, workload=workload
    )
    request["device"] = device
    return kind, request


def throughput_metric(row: dict[str, str]) -> str:
    """ "prefill" or "decode": the metric a throughput.csv row counts in, sized or not."""
    parsed = parse_test(row["test"], 1)
    return "prefill" if parsed is not None and parsed[0] == "prefill" else "decode"


def throughput_figure(row: dict[str, str], kind: str) -> str:
    """The result field a throughput.csv row measures (the aggregate for batched rows)."""
    if kind == "prefill":
        return "prefill_tokens_per_s"
    if "batched" in row["test"].lower():
        return "aggregate_decode_tokens_per_s"
    return "decode_tokens_per_s"


def validate_throughput() -> list[Metric]:
    """decode_tokens_per_s (aggregate for batched rows) and prefill_tokens_per_s vs
    throughput.csv, with the share of measurements inside [low, high]."""
    decode = Metric(
        "throughput.csv",
        "decode_tokens_per_s",
        Target(median_pct=10.0, p90_pct=25.0, inside_share=0.8, median_high_over_low=1.6),
    )
    prefill = Metric("throughput.csv", "prefill_tokens_per_s", Target(median_pct=20.0))
    for row in read_csv("throughput.csv"):
        built = throughput_request(row)
        metric = prefill if throughput_metric(row) == "prefill" else decode
        if isinstance(built, str):
            metric.skip(built)
            continue
        kind, request = built
        result = run(metric, request)
        if result is None:
            continue
        measured = float(row["value_tps"])
        figure = result[throughput_figure(row, kind)]
        if figure is None:
            metric.skip("no TFLOPS figure for the device")
            continue
        metric.add(figure["estimate"], measured, figure["low"], figure["high"])
    return [decode, prefill]


VALIDATORS: tuple[Callable[[], list[Metric]], ...] = (
    validate_gguf_sizes,
    validate_gguf_sizes_ud,
    validate_llamacpp_memory,
    validate_vllm_memory,
    validate_throughput,
)


def report() -> list[dict[str, Any]]:
    """Every metric's summary, in data-set order."""
    return [metric.summary() for validator in VALIDATORS for metric in validator()]


def _fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)


def format_report(summaries: list[dict[str, Any]]) -> Iterator[str]:
    yield (
        f"{'data set':<21} {'figure':<52} {'n':>4} {'skip':>4} {'median%':>8} {'p90%':>7} "
        f"{'max%':>7} {'inside':>6} {'hi/lo':>5}  verdict"
    )
    for s in summaries:
        verdict = (
            "MISS " + ",".join(s["misses"])
            if s["misses"]
            else ("ok" if s["target"] else "(no target)")
        )
        yield (
            f"{s['dataset']:<21} {s['figure']:<52} {s['count']:>4} {s['skipped']:>4} "
            f"{_fmt(s['median_pct'], '{:.2f}'):>8} {_fmt(s['p90_pct'], '{:.2f}'):>7} "
            f"{_fmt(s['max_pct'], '{:.2f}'):>7} {_fmt(s['inside_share'], '{:.0%}'):>6} "
            f"{_fmt(s['median_high_over_low'], '{:.2f}'):>5}  {verdict}"
        )
    yield ""
    yield "targets: " + "; ".join(
        f"{s['figure']}: "
        + ", ".join(
            f"{k}<={v}" if k != "inside_share" else f"{k}>={v}" for k, v in s["target"].items()
        )
        for s in summaries
        if s["target"]
    )


HOLDOUTS = (
    ("by_device", "whole devices held out"),
    ("by_model", "whole models held out"),
    ("by_source", "whole sources held out"),
)


def format_speed_holdouts(calibration: dict[str, Any]) -> Iterator[str]:
    """The speed model's accuracy on held-out data (calibration.json, written by
    `python -m estimator.calibration`): grouped hold-outs first, where every prediction of
    a device's (a model's, a source's) rows comes from a fit without any of them; then
    in-sample (fitted and checked on the same rows), which flatters the figure. Bias:
    median signed error (positive = too fast)."""
    grouped = calibration["grouped_holdout"]
    yield "speed on held-out data (|predicted - measured| / measured; bias: predicted too fast > 0)"
    yield f"{'figure':<9} {'hold-out':<28} {'n':>4} {'median%':>8} {'p90%':>7} {'bias%':>6}"
    for kind in ("decode", "prefill"):
        for name, label in HOLDOUTS:
            s = grouped[name][kind]
            yield (
                f"{kind:<9} {label:<28} {s['n']:>4} {s['median_abs_pct_err']:>8.2f} "
                f"{s['p90_abs_pct_err']:>7.2f} {s['median_signed_pct_err']:>6.1f}"
            )
        fit = calibration["in_sample"][kind]
        yield (
            f"{kind:<9} {'in-sample (not held out)':<28} {fit['n']:>4} "
            f"{fit['median_abs_pct_err']:>8.2f} {fit['p90_abs_pct_err']:>7.2f} {'-':>6}"
        )
    for split in ("bias_by_backend", "bias_by_engine"):
        parts = grouped["by_device"]["decode"][split]
        yield f"decode {split.replace('_', ' ')} (devices held out): " + ", ".join(
            f"{k} {v['median_signed_pct_err']:+.1f} % (n {v['n']})" for k, v in parts.items()
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m estimator.validate", description="Accuracy of the estimator on public data."
    )
    parser.add_argument("--json", action="store_true", help="print the summaries as JSON")
    args = parser.parse_args(argv)
    summaries = report()
    if args.json:
        print(json.dumps(summaries, indent=2))
    else:
        for line in format_report(summaries):
            print(line)
        print()
        for line in format_speed_holdouts(load_calibration()):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
