"""Compare: up to four configurator states side by side, each column sized by the
configurator's one workflow (configurator.state.configuration_size) with the column's
parameters and the configurator's defaults for the rest, and the figure rows with the best
values marked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from catalog import hardware
from catalog.models import Accelerator, LLMModel
from sizing_site.configurator.state import (
    StateError,
    configuration_pair,
    configuration_size,
    shown_figures,
)
from sizing_site.explore.forms import ColumnSpec

# (label, result path, kind, which end is better); labels are marked for translation
# where the template renders them.
COMPARE_ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("fit", "fit.verdict", "verdict", ""),
    ("utilisation", "fit.utilisation", "share", "low"),
    ("weights", "weights_bytes", "bytes", "low"),
    ("kv", "kv_cache_bytes", "bytes", "low"),
    ("overhead", "overhead_bytes", "bytes", "low"),
    ("per_device", "per_device_bytes", "bytes", "low"),
    ("usable", "usable_bytes_per_device", "bytes", "high"),
    ("decode", "decode_tokens_per_s", "speed", "high"),
    ("prefill", "prefill_tokens_per_s", "speed", "high"),
    ("ttft", "ttft_s", "seconds", "low"),
    ("max_context", "max_context_tokens", "tokens", "high"),
    ("max_sequences", "max_concurrent_sequences", "count", "high"),
)


@dataclass(frozen=True)
class CompareColumn:
    model: LLMModel
    accelerator: Accelerator
    quant: str  # the quant sized (the best that fits, when asked for); as asked on an error
    gpus: int
    # The result as every page shows it (configurator.state.shown_figures, JSON types, as
    # saved reports keep it); None with an error.
    result: dict[str, Any] | None
    error: str = ""  # a COMPARE_ERRORS code, or the message of the state's refusal
    choice: hardware.EngineChoice | None = None  # the engine and backend sized
    spec: ColumnSpec | None = None  # the column as asked
    note: str = ""  # why the format asked for was dropped for the best that fits


@dataclass(frozen=True)
class CompareRow:
    label: str
    kind: str  # "bytes" | "speed" | "seconds" | "tokens" | "count" | "verdict" | "share"
    values: list[Any]
    best: set[int]  # columns holding the best value (more than one on a tie)
    # Columns whose speed no published measurement backs (a speed or seconds row with a
    # value): the table marks them with the uncalibrated badge and never stars them.
    uncalibrated: set[int] = field(default_factory=set)


# The state's refusals the compare pages word themselves (templatetags explore.compare_error).
ERROR_CODES = {"unknown": "unknown", "unsized": "unsized", "no_engine": "no_engine"}


def compare_columns(*, specs: Sequence[ColumnSpec], context_tokens: int) -> list[CompareColumn]:
    """Each column sized as the configurator sizes its parameters (the public catalog's
    rows); an unknown slug or a state the configurator refuses is a column error."""
    return [_column(spec, context_tokens) for spec in specs]


def _column(spec: ColumnSpec, context_tokens: int) -> CompareColumn:
    model: LLMModel | None = None
    card: Accelerator | None = None
    try:
        model, card = configuration_pair(
            model_slug=spec.model_slug, accelerator_slug=spec.accelerator_slug
        )
        state = configuration_size(
            model=model, accelerator=card, data=spec.configurator_query(context_tokens)
        )
    except StateError as exc:
        return CompareColumn(
            model=model or LLMModel(slug=spec.model_slug, name=spec.model_slug),
            accelerator=card or Accelerator(slug=spec.accelerator_slug, name=spec.accelerator_slug),
            quant=spec.quant,
            gpus=spec.gpus,
            result=None,
            error=ERROR_CODES.get(exc.reason, str(exc)),
            spec=spec,
        )
    return CompareColumn(
        model=model,
        accelerator=card,
        quant=state.setup.quant,
        gpus=state.setup.gpus,
        result=state.shown_result(),
        choice=state.form.engines[state.setup.engine],
        spec=spec,
        note=state.quant_note,
    )


def _value(result: dict[str, Any] | None, path: str) -> Any:
    value: Any = result
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _calibrated(column: CompareColumn) -> bool:
    return bool((column.result or {}).get("speed_calibrated", True))


def compare_rows(columns: Sequence[CompareColumn]) -> list[CompareRow]:
    """One row per figure; `best` marks the best value when the columns differ."""
    # No speed for a column that does not fit, as on every page (a snapshot saved before
    # that rule still holds its speeds).
    results = [None if c.result is None else shown_figures(c.result) for c in columns]
    rows = []
    for label, path, kind, better in COMPARE_ROWS:
        values = [_value(result, path) for result in results]
        numbers = {
            i: (v["estimate"] if isinstance(v, dict) else v)
            for i, v in enumerate(values)
            if v is not None and not isinstance(v, str)
        }
        uncalibrated: set[int] = set()
        if kind in ("speed", "seconds"):
            # A speed without published measurements behind it is shown, never starred.
            uncalibrated = {i for i in numbers if not _calibrated(columns[i])}
            numbers = {i: n for i, n in numbers.items() if i not in uncalibrated}
        best: set[int] = set()
        if better and len(set(numbers.values())) > 1:
            target = min(numbers.values()) if better == "low" else max(numbers.values())
            best = {i for i, n in numbers.items() if n == target}
        rows.append(CompareRow(label, kind, values, best, uncalibrated))
    return rows
