"""Speed: decode (aggregate for batched rows) and prefill tokens/s against
throughput.csv, with the share of measurements inside [low, high]."""

from __future__ import annotations

from functools import cache
from typing import Any

from estimator.calibration.rows import (
    DEVICE_ALIASES,
    engine_of,
    exclusion_reason,
    load_accelerators,
    parse_test,
    split_device,
)
from estimator.speed import normalize_backend
from estimator.units import GB
from estimator.validate.data import BIG_DEVICE_GB, base_request, config_for, read_csv, run
from estimator.validate.metrics import Metric, Target

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
    if spec is not None and spec.tdp_w:
        device["tdp_w"] = spec.tdp_w
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
