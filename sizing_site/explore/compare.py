"""Compare: up to four configurator states side by side, each column sized by the
configurator's one workflow (configurator.state.configuration_size) with the column's
parameters and the configurator's defaults for the rest, priced as the configurator's
answer panel prices it (configurator.state.state_answer), and the figure rows with the best
values starred where more or less is clearly better (STARRED)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from catalog import hardware
from catalog.models import Accelerator, LLMModel
from sizing_site.configurator.rent_forms import RentBuyForm
from sizing_site.configurator.selectors import Answer
from sizing_site.configurator.state import (
    StateError,
    configuration_pair,
    configuration_size,
    shown_figures,
    state_answer,
)
from sizing_site.explore.forms import ColumnSpec

# (label, path into the column's figures, kind, which end is better: "high", "low" or ""
# for none); labels are marked for translation where the template renders them. Only
# figures where more or less is clearly better get a star: speeds, the first token, the
# cost and the prices. Memory figures, the share used, the context and the concurrency
# that fit describe a setup (a smaller weights file is a coarser format, not a better
# one), so they are never starred.
COMPARE_ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("fit", "fit.verdict", "verdict", ""),
    ("utilisation", "fit.utilisation", "share", ""),
    ("weights", "weights_bytes", "bytes", ""),
    ("kv", "kv_cache_bytes", "bytes", ""),
    ("overhead", "overhead_bytes", "bytes", ""),
    ("per_device", "per_device_bytes", "bytes", ""),
    ("usable", "usable_bytes_per_device", "bytes", ""),
    ("decode", "decode_tokens_per_s", "speed", "high"),
    ("prefill", "prefill_tokens_per_s", "speed", "high"),
    ("ttft", "ttft_s", "seconds", "low"),
    ("max_context", "max_context_tokens", "tokens", ""),
    ("max_sequences", "max_concurrent_sequences", "count", ""),
    ("cost", "cost", "cost", "low"),
    ("cloud_price", "cost.usd_per_hour", "usd_per_hour", "low"),
    ("hardware_price", "cost.purchase_usd", "usd", "low"),
)
# The rows a star can mark (a test lists them).
STARRED = frozenset(label for label, _path, _kind, better in COMPARE_ROWS if better)
# Rows whose figure follows from the decode speed: a column whose speed no published
# measurement backs is badged there and never starred.
SPEED_KINDS = frozenset({"speed", "seconds", "cost"})
# The number a row compares when its value is an object.
NUMBER_KEYS = {"speed": "estimate", "seconds": "estimate", "cost": "usd_per_million"}


@dataclass(frozen=True)
class ColumnCost:
    """What a column costs, as the configurator's answer panel says it: USD per 1M output
    tokens at the aggregate decode speed of the setup's `sequences` (1: per user), rented
    from the cheapest public cloud offer with at least the setup's GPUs (`basis`
    "rented": `provider`, `usd_per_hour` = the setup's share of the instance's hour) or,
    without one, owned (`basis` "owned": the hardware's `purchase_usd` paid off over three
    years, busy half of every day, pricing.costs.owned_ownership); `basis` "" when neither
    prices it. usd_per_hour and purchase_usd are also the price rows, each shown when
    known; owned_usd_per_million is the owner's figure beside a rented one."""

    usd_per_million: float | None
    basis: str  # "rented" | "owned" | ""
    sequences: int = 1
    provider: str = ""
    usd_per_hour: float | None = None
    gpus: int = 0  # GPUs the rented setup uses
    offer_gpus: int = 0  # GPUs of the rented instance
    purchase_usd: float | None = None  # the cards (and host) as the configurator prices them
    owned_usd_per_million: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def answer_cost(answer: Answer, rent: RentBuyForm, *, sequences: int) -> ColumnCost:
    """The answer panel's cost (configurator.selectors.Answer) as a column's: no second
    formula, the panel's figures renamed."""
    cloud = answer.cloud
    ownership = rent.owner_cost_basis()
    basis = ""
    if answer.per_million is not None:
        basis = "rented" if answer.from_cloud else "owned"
    return ColumnCost(
        usd_per_million=answer.per_million,
        basis=basis,
        sequences=sequences,
        provider=cloud.offer.provider.name if cloud is not None else "",
        usd_per_hour=cloud.per_hour if cloud is not None else None,
        gpus=cloud.gpus if cloud is not None else 0,
        offer_gpus=cloud.offer_gpus if cloud is not None else 0,
        purchase_usd=ownership.purchase_usd if ownership is not None else None,
        owned_usd_per_million=answer.owned_per_million,
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
    cost: ColumnCost | None = None  # None with an error, or a snapshot saved without one


@dataclass(frozen=True)
class CompareRow:
    label: str
    # "bytes" | "speed" | "seconds" | "tokens" | "count" | "verdict" | "share" | "cost"
    # (ColumnCost.to_json) | "usd_per_hour" | "usd"
    kind: str
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
        # The answer panel's cost at the rent-or-buy form's defaults (the catalog's price).
        rent = RentBuyForm.for_card({}, accelerator=card, gpus=state.setup.gpus)
        answer = state_answer(state=state, rent=rent, analysis=False).answer
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
        cost=answer_cost(answer, rent, sequences=state.setup.sequences),
    )


def _value(result: dict[str, Any] | None, path: str) -> Any:
    value: Any = result
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _calibrated(column: CompareColumn) -> bool:
    return bool((column.result or {}).get("speed_calibrated", True))


def compare_rows(columns: Sequence[CompareColumn]) -> list[CompareRow]:
    """One row per figure; `best` marks the best value when the columns differ, on the
    STARRED rows only, among the columns that fit and whose speed is calibrated."""
    # No speed for a column that does not fit, as on every page (a snapshot saved before
    # that rule still holds its speeds).
    figures = [
        None
        if c.result is None
        else {**shown_figures(c.result), "cost": None if c.cost is None else c.cost.to_json()}
        for c in columns
    ]
    runs = {i for i, f in enumerate(figures) if f and _value(f, "fit.verdict") != "does_not_fit"}
    rows = []
    for label, path, kind, better in COMPARE_ROWS:
        values = [_value(f, path) for f in figures]
        numbers = {
            i: n
            for i, v in enumerate(values)
            if (n := v.get(NUMBER_KEYS[kind]) if isinstance(v, dict) else v) is not None
            and not isinstance(n, str)
        }
        uncalibrated: set[int] = set()
        if kind in SPEED_KINDS:
            # A speed without published measurements behind it is shown, never starred.
            uncalibrated = {i for i in numbers if not _calibrated(columns[i])}
        best: set[int] = set()
        ranked = {i: n for i, n in numbers.items() if i in runs and i not in uncalibrated}
        if better and len(set(ranked.values())) > 1:
            target = min(ranked.values()) if better == "low" else max(ranked.values())
            best = {i for i, n in ranked.items() if n == target}
        rows.append(CompareRow(label, kind, values, best, uncalibrated))
    return rows
