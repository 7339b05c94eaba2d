"""The published rows of estimator/data/validation/, with estimator.validate's own requests,
skip rules and row readers (imported, not copied), as Cases the portal can replay."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from estimator import validate
from estimator.calibration.rows import split_device
from estimator.units import GIB

MEMORY = "memory"
SPEED = "speed"
SKIP_CPU = "device not in catalog (CPU-only run)"
SKIP_MIXED = "mixed accelerators (the page sizes one kind)"
BY_ESTIMATOR = "estimator.validate: "  # prefix of the reasons estimator.validate skips a row


@dataclass(frozen=True)
class Dataset:
    key: str  # the --dataset name
    source: str  # file in estimator/data/validation/
    figure: str  # result field compared with the measurement
    kind: str  # MEMORY | SPEED


DATASETS: tuple[Dataset, ...] = (
    Dataset("gguf_sizes", "gguf_sizes.csv", "weights_bytes", MEMORY),
    Dataset("llamacpp_kv", "llamacpp_memory.csv", "kv_cache_bytes", MEMORY),
    Dataset("llamacpp_compute", "llamacpp_memory.csv", "overhead_breakdown.compute_buffer", MEMORY),
    Dataset("vllm_weights", "vllm_memory.csv", "per_device_weights_bytes", MEMORY),
    Dataset("vllm_kv_tokens", "vllm_memory.csv", "kv_cache_capacity_tokens", MEMORY),
    Dataset("usable_memory", "vllm_memory.csv", "usable_bytes_per_device", MEMORY),
    Dataset("vllm_kv_budget", "vllm_memory.csv", "kv_budget_bytes", MEMORY),
    Dataset("decode", "throughput.csv", "decode_tokens_per_s", SPEED),
    Dataset("prefill", "throughput.csv", "prefill_tokens_per_s", SPEED),
)
DATASET_KEYS: tuple[str, ...] = tuple(d.key for d in DATASETS)


@dataclass(frozen=True)
class Measure:
    dataset: str
    measured: float
    path: str  # result field, dotted ("overhead_breakdown.compute_buffer")


@dataclass(frozen=True)
class Case:
    """One published row with estimator.validate's request (published device figures)."""

    row_id: str
    model_names: tuple[str, ...]  # the data set's model name (llama.cpp: then its arch)
    device: str  # "" when the data set names no device
    device_count: int
    request: dict[str, Any]
    measures: tuple[Measure, ...]
    device_skip: str = ""  # why no catalog accelerator can stand for the row's devices


@dataclass(frozen=True)
class Skip:
    datasets: tuple[str, ...]
    reason: str


Item = Case | Skip


def gguf_cases() -> Iterator[Item]:
    """gguf_sizes.csv, with validate_gguf_sizes' request and skip rules."""
    for number, row in enumerate(validate.read_csv("gguf_sizes.csv"), 1):
        built = validate.gguf_request(row)
        if isinstance(built, str):
            yield Skip(("gguf_sizes",), BY_ESTIMATOR + built)
            continue
        request, measured = built
        yield Case(
            row_id=f"gguf_sizes.csv#{number}",
            model_names=(row["model"],),
            device="",
            device_count=1,
            request=request,
            measures=(Measure("gguf_sizes", measured, "weights_bytes"),),
        )


def _llama_devices(row: dict[str, str]) -> tuple[str, str]:
    """(device name, reason it cannot be sized) from the log's ';'-separated GPU list."""
    names = {name.strip() for name in row["gpus"].split(";") if name.strip()}
    if not names:
        return "", SKIP_CPU
    if len(names) > 1:
        return "", SKIP_MIXED
    return names.pop(), ""


def llamacpp_cases() -> Iterator[Item]:
    """llamacpp_memory.csv, with validate_llamacpp_memory's request and skip rules."""
    for row in validate.read_csv("llamacpp_memory.csv"):
        request = validate.llamacpp_request(row)
        if isinstance(request, str):
            yield Skip(("llamacpp_kv", "llamacpp_compute"), BY_ESTIMATOR + request)
            continue
        measures = [Measure("llamacpp_kv", validate.mib(row["kv_total_mib"]), "kv_cache_bytes")]
        compute = validate.compute_buffer_measure(row)
        if isinstance(compute, str):
            yield Skip(("llamacpp_compute",), BY_ESTIMATOR + compute)
        else:
            measures.append(
                Measure("llamacpp_compute", compute, "overhead_breakdown.compute_buffer")
            )
        device, device_skip = _llama_devices(row)
        yield Case(
            row_id=row["record_id"],
            model_names=(row["model"], row["arch"]),
            device=device,
            device_count=int(row["n_gpus"] or 0) or 1,
            request=request,
            measures=tuple(measures),
            device_skip=device_skip,
        )


VLLM_KEYS = ("vllm_weights", "vllm_kv_tokens", "usable_memory", "vllm_kv_budget")


def _vllm_measures(row: dict[str, str]) -> tuple[list[Measure], list[Skip]]:
    """The log's figures: weights, KV tokens, usable memory (utilization x total) and the
    KV budget ("Available KV cache memory")."""
    usable = float(row["gpu_memory_utilization"]) * float(row["total_gpu_memory_gib"]) * GIB
    candidates = (
        ("vllm_weights", _gib(row["weights_gib"]), "per_device_weights_bytes"),
        ("vllm_kv_tokens", validate.vllm_kv_tokens(row), "kv_cache_capacity_tokens"),
        ("usable_memory", usable, "usable_bytes_per_device"),
        ("vllm_kv_budget", _gib(row["kv_cache_gib"]), "kv_budget_bytes"),
    )
    measures, skips = [], []
    for key, measured, path in candidates:
        if measured is not None:
            measures.append(Measure(key, measured, path))
        else:
            skips.append(Skip((key,), BY_ESTIMATOR + "no such figure in the log"))
    return measures, skips


def _gib(text: str) -> float | None:
    return float(text) * GIB if text else None


def vllm_cases() -> Iterator[Item]:
    """vllm_memory.csv, with validate_vllm_memory's request and skip rules."""
    for row in validate.read_csv("vllm_memory.csv"):
        request = validate.vllm_request(row)
        if isinstance(request, str):
            yield Skip(VLLM_KEYS, BY_ESTIMATOR + request)
            continue
        measures, skips = _vllm_measures(row)
        yield from skips
        yield Case(
            row_id=row["record_id"],
            model_names=(row["model"],),
            device=row["gpu"],
            device_count=int(row["tp"] or 1) * int(row["pp"] or 1),
            request=request,
            measures=tuple(measures),
        )


def throughput_cases() -> Iterator[Item]:
    """throughput.csv, with validate_throughput's request and skip rules."""
    for number, row in enumerate(validate.read_csv("throughput.csv"), 1):
        key = validate.throughput_metric(row)
        built = validate.throughput_request(row)
        if isinstance(built, str):
            yield Skip((key,), BY_ESTIMATOR + built)
            continue
        kind, request = built
        path = validate.throughput_figure(row, kind)
        count, device = split_device(row["device"])
        yield Case(
            row_id=f"throughput.csv#{number}",
            model_names=(row["model"],),
            device=device,
            device_count=count,
            request=request,
            measures=(Measure(key, float(row["value_tps"]), path),),
        )


CASE_SOURCES: tuple[tuple[tuple[str, ...], Callable[[], Iterator[Item]]], ...] = (
    (("gguf_sizes",), gguf_cases),
    (("llamacpp_kv", "llamacpp_compute"), llamacpp_cases),
    (VLLM_KEYS, vllm_cases),
    (("decode", "prefill"), throughput_cases),
)
