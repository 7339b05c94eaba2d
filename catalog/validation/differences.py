"""Why the page's request differs from estimator.validate's, by catalog field."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import fields, replace
from typing import Any

from catalog.models import Accelerator, LLMModel
from catalog.validation.cases import MEMORY
from catalog.validation.lookup import Match, Value, figure_value
from estimator import validate
from estimator.api import Request, RequestError, check_request, result_to_dict, run_estimate
from estimator.api import cache as estimator_cache
from estimator.units import GB, GIB

# Device fields that do not enter a memory figure.
SPEED_ONLY_DEVICE_FIELDS = frozenset(
    {"bandwidth_gbps", "fp16_tflops", "fp8_tflops", "fp4_tflops", "int8_tops", "tdp_w"}
    | {"interconnect_gbps"}
    | {"vendor", "device_class", "host_bandwidth_gbps"}
)


def request_differences(*, ours: Request, page: Request, match: Match, kind: str) -> list[str]:
    """Effective differences between estimator.validate's request and the page's (both
    with the estimator's defaults), naming the catalog field behind each."""
    a, b = ours, page
    notes = [*_model_notes(a, b, match.model), *_weights_notes(a, b)]
    notes += _device_notes(a, b, match.accelerator, kind)
    for section in ("engine", "workload"):
        notes += _field_notes(section, getattr(a, section), getattr(b, section))
    return notes


def _field_notes(section: str, ours: Any, page: Any, skip: Iterable[str] = ()) -> list[str]:
    return [
        f"{section}.{f.name}: estimator.validate {getattr(ours, f.name)!r}, "
        f"the page {getattr(page, f.name)!r}"
        for f in fields(ours)
        if f.name not in skip and getattr(ours, f.name) != getattr(page, f.name)
    ]


def _model_notes(ours: Request, page: Request, model: LLMModel) -> list[str]:
    if ours.model.hf_config_json == page.model.hf_config_json:
        return []
    a = estimator_cache.model_spec(ours.model.hf_config_json)
    b = estimator_cache.model_spec(page.model.hf_config_json)
    changed = [f.name for f in fields(a) if getattr(a, f.name) != getattr(b, f.name)]
    if changed in ([], ["notes"]):
        return []
    return [f"catalog config of {model.slug} parses differently ({', '.join(changed)})"]


def _weights_notes(ours: Request, page: Request) -> list[str]:
    a, b = ours.weights, page.weights
    notes = _field_notes("weights", a, b, skip=("file_bytes", "imatrix"))
    if a.file_bytes is None and b.file_bytes is not None:
        notes.append(
            f"catalog ModelWeights {b.name} has a measured file_bytes {b.file_bytes:,}; "
            "estimator.validate computes the size"
        )
    elif a.file_bytes != b.file_bytes:
        notes.append(
            f"catalog ModelWeights {b.name} file_bytes {b.file_bytes}; estimator.validate "
            f"uses the row's file {a.file_bytes:,} (Setup cannot carry it)"
        )
    if a.imatrix != b.imatrix:
        notes.append(f"Setup has no imatrix setting (row: imatrix={a.imatrix})")
    return notes


def _device_notes(ours: Request, page: Request, card: Accelerator, kind: str) -> list[str]:
    a, b = ours.device, page.device
    skip = {"memory_gb", "name"} | (SPEED_ONLY_DEVICE_FIELDS if kind == MEMORY else set())
    notes = [f"accelerator {card.slug} {n}" for n in _field_notes("device", a, b, skip=skip)]
    # estimator.validate sizes GGUF, llama.cpp and speed rows on a huge device: no total.
    if a.memory_gb != validate.BIG_DEVICE_GB and a.memory_gb != b.memory_gb:
        reported = getattr(card, "memory_reported_gib", None)
        notes.append(
            f"accelerator {card.slug} memory_reported_gib "
            f"{'is null' if reported is None else reported}; the page's total "
            f"{b.memory_gb * GB / GIB:.2f} GiB vs published {a.memory_gb * GB / GIB:.2f} GiB"
        )
    return notes


def _swaps(ours: Request, page: Request) -> Iterator[tuple[str, Request]]:
    """(part, the page's request with that part taken from estimator.validate's request)."""
    for section in ("model", "weights"):
        if getattr(ours, section) != getattr(page, section):
            yield section, replace(page, **{section: getattr(ours, section)})
    for field in sorted(f.name for f in fields(page.device)):
        theirs = getattr(ours.device, field)
        if field == "name" or theirs == getattr(page.device, field):
            continue
        if field == "memory_gb" and theirs == validate.BIG_DEVICE_GB:
            continue  # estimator.validate's stand-in for "memory does not matter here"
        yield f"device.{field}", replace(page, device=replace(page.device, **{field: theirs}))


def _figure(request: Request, path: str) -> Value | None:
    """`path` of the estimator's result for `request` (checked as parse_request would)."""
    return figure_value(result_to_dict(run_estimate(check_request(request))), path)


CAUSE_SHARE = 0.5  # a part "explains" a difference when it alone closes half the gap


def causes(*, ours: Request, page: Request, path: str, target: float) -> tuple[str, ...]:
    """The request parts that, taken alone from estimator.validate's request, close at
    least CAUSE_SHARE of the gap between the page's figure and `target` (the estimator's),
    as "part (share %)", largest share first."""
    start = _figure(page, path)
    if start is None or start[0] == target:
        return ()
    shares = []
    for part, request in _swaps(ours, page):
        try:
            value = _figure(request, path)
        except RequestError:
            continue
        if value is not None:
            shares.append((1 - abs(value[0] - target) / abs(start[0] - target), part))
    return tuple(
        f"{part} ({share:.0%})"
        for share, part in sorted(shares, reverse=True)
        if share >= CAUSE_SHARE
    )
