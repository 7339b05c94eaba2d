"""Reads for the explore pages: a model across every card, a card across every model.

Every page loads its whole candidate set in a fixed number of queries and filters, sorts
and sums in Python: the sweep behind a page covers every card anyway (and is cached per
model, context and ladder by catalog.sizing), so the query count stays flat however
large the catalog grows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db.models import Q
from django.utils.translation import gettext as _

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel
from catalog.sizing import CardFit
from catalog.sizing.candidates import CARD_FIELDS, MODEL_FIELDS, offers_context
from estimator.api import RequestError, result_to_dict
from pricing.costs import usd_per_token_per_s

TOP_N = 10
R = TypeVar("R")


@dataclass(frozen=True)
class CardRow:
    accelerator: Accelerator
    fit: CardFit
    usd_per_token_per_s: float | None

    @property
    def fits(self) -> bool:
        return self.fit.quant is not None


@dataclass(frozen=True)
class ModelRow:
    model: LLMModel
    fit: CardFit

    @property
    def fits(self) -> bool:
        return self.fit.quant is not None


@dataclass(frozen=True)
class CardTable:
    rows: list[CardRow]  # filtered and sorted, cards that cannot run it only on request
    candidates: int  # cards matching the filters
    fitting: int
    smallest: CardRow | None
    fastest: CardRow | None
    top_speed: list[CardRow]
    top_price: list[CardRow]


def _matches(card: Accelerator, q: str) -> bool:
    needle = q.casefold()
    texts = [card.name, card.vendor, *(str(a) for a in card.aliases or [])]
    return any(needle in text.casefold() for text in texts)


CARD_SORTS: dict[str, Callable[[CardRow], Any]] = {
    "speed": lambda r: r.fit.calibrated_speed,
    "name": lambda r: r.accelerator.name.casefold(),
    "vendor": lambda r: r.accelerator.vendor.casefold(),
    "memory": lambda r: r.accelerator.capacity_gib,
    "bandwidth": lambda r: r.accelerator.bandwidth_gbps,
    "release": lambda r: r.accelerator.release_date,
    "need": lambda r: r.fit.need_bytes,
    "quant": lambda r: r.fit.quant,
    "price": lambda r: r.usd_per_token_per_s,
}
MODEL_SORTS: dict[str, Callable[[ModelRow], Any]] = {
    "speed": lambda r: r.fit.calibrated_speed,
    "name": lambda r: r.model.name.casefold(),
    "params": lambda r: r.model.params_total,
    "need": lambda r: r.fit.need_bytes,
    "quant": lambda r: r.fit.quant,
}


def sorted_rows(rows: list[R], sort: str, keys: dict[str, Callable[[R], Any]]) -> list[R]:
    """Sort by `sort` ("-speed" is descending); rows without the value go last."""
    key = keys[sort.lstrip("-")]
    known = [r for r in rows if key(r) is not None]
    unknown = [r for r in rows if key(r) is None]
    return sorted(known, key=key, reverse=sort.startswith("-")) + unknown


def model_card_table(
    *,
    model: LLMModel,
    accelerators: Sequence[Accelerator],
    quants: Sequence[str],
    context_tokens: int,
    q: str = "",
    vendor: str = "",
    memory_min_gb: float | None = None,
    show_all: bool = False,
    sort: str = "-speed",
) -> CardTable:
    """`model` on every card, each under its own default engine (catalog.hardware); a card
    no engine in the catalog runs on is listed only with show_all. Raises
    estimator.api.RequestError (e.g. context too long)."""
    fits = sizing.model_on_cards(
        model,
        accelerators,
        quants=quants,
        context_tokens=context_tokens,
        matrix=hardware.support_matrix(),
    )
    rows = [
        CardRow(card, fit, usd_per_token_per_s(card.price_usd, fit))
        for card, fit in zip(accelerators, fits, strict=True)
        if (not q or _matches(card, q))
        and (not vendor or card.vendor == vendor)
        and (memory_min_gb is None or (card.capacity_gib or 0) >= memory_min_gb)
    ]
    fitting = [r for r in rows if r.fits]
    by_speed = sorted_rows(fitting, "-speed", CARD_SORTS)
    priced = [r for r in fitting if r.usd_per_token_per_s is not None]
    return CardTable(
        rows=sorted_rows(rows if show_all else fitting, sort, CARD_SORTS),
        candidates=len(rows),
        fitting=len(fitting),
        smallest=min(
            fitting,
            key=lambda r: (r.accelerator.memory_gb, -(r.fit.calibrated_speed or 0)),
            default=None,
        ),
        fastest=by_speed[0] if by_speed else None,
        top_speed=by_speed[:TOP_N],
        top_price=sorted_rows(priced, "price", CARD_SORTS)[:TOP_N],
    )


@dataclass(frozen=True)
class ModelTable:
    rows: list[ModelRow]
    candidates: int
    fitting: int
    skipped: list[tuple[LLMModel, str]]  # models the estimator refused, with its reason


def card_model_table(
    *,
    accelerator: Accelerator,
    models: Sequence[LLMModel],
    quants: Sequence[str],
    context_tokens: int,
    q: str = "",
    show_all: bool = False,
    sort: str = "-speed",
) -> ModelTable:
    """`accelerator` across every model with a config; a model whose maximum context is
    shorter than `context_tokens` (or whose config the estimator rejects) is skipped."""
    eligible = [m for m in models if offers_context(m, context_tokens)]
    fits = dict(
        zip(
            (m.pk for m in eligible),
            sizing.models_on_card(
                accelerator,
                eligible,
                quants=quants,
                context_tokens=context_tokens,
                matrix=hardware.support_matrix(),
            ),
            strict=True,
        )
    )
    rows, skipped = [], []
    for model in models:
        if q and not any(q.casefold() in t.casefold() for t in (model.name, model.family)):
            continue
        fit = fits.get(model.pk, _("its published context is shorter"))
        if isinstance(fit, str):
            skipped.append((model, fit))
        else:
            rows.append(ModelRow(model, fit))
    fitting = [r for r in rows if r.fits]
    return ModelTable(
        rows=sorted_rows(rows if show_all else fitting, sort, MODEL_SORTS),
        candidates=len(rows),
        fitting=len(fitting),
        skipped=skipped,
    )


def search(*, q: str, limit: int = 8) -> tuple[list[LLMModel], list[Accelerator]]:
    """Models (with a config) and cards whose name matches; curated cards first."""
    if not q:
        return [], []
    models = (
        LLMModel.objects.exclude(config={})
        .filter(Q(name__icontains=q) | Q(slug__icontains=q) | Q(family__icontains=q))
        .only("slug", "name", "family")
        .order_by("name")[:limit]
    )
    cards = (
        Accelerator.objects.filter(memory_gb__gt=0, bandwidth_gbps__gt=0)
        .filter(Q(name__icontains=q) | Q(vendor__icontains=q) | Q(aliases__icontains=q))
        .only("slug", "name", "vendor", "memory_gb", "memory_gib", "curated")
        .order_by("-curated", "vendor", "name")[:limit]
    )
    return list(models), list(cards)


# Pairs people ask about first: (model slug, accelerator slug, context tokens). Each pair
# exists in the seed data (tests/explore checks it against load_catalog); a pair whose
# rows an admin deleted simply drops off the home page.
POPULAR_PAIRS: tuple[tuple[str, str, int], ...] = (
    ("llama-3-1-8b-instruct", "nvidia-geforce-rtx-4090", 8192),
    ("qwen3-30b-a3b", "nvidia-geforce-rtx-3090", 32768),
    ("gpt-oss-20b", "nvidia-geforce-rtx-5090", 32768),
    ("llama-3-3-70b-instruct", "apple-macbook-pro-m4-max-40-core-gpu-128gb", 8192),
    ("qwen3-32b", "amd-radeon-rx-7900-xtx", 8192),
    ("gpt-oss-120b", "nvidia-h100-pcie-80gb", 32768),
    ("deepseek-r1", "nvidia-h200-sxm-141gb", 8192),
    ("qwen3-235b-a22b", "amd-ryzen-ai-max-395-radeon-8060s", 8192),
)


@dataclass(frozen=True)
class Pair:
    model: LLMModel
    accelerator: Accelerator
    context_tokens: int


def popular_pairs() -> list[Pair]:
    """POPULAR_PAIRS whose rows exist, in two queries."""
    models = LLMModel.objects.exclude(config={}).only("slug", "name")
    models_by_slug = {m.slug: m for m in models.filter(slug__in={p[0] for p in POPULAR_PAIRS})}
    cards = Accelerator.objects.only("slug", "name", "vendor")
    cards_by_slug = {a.slug: a for a in cards.filter(slug__in={p[1] for p in POPULAR_PAIRS})}
    return [
        Pair(models_by_slug[m], cards_by_slug[a], ctx)
        for m, a, ctx in POPULAR_PAIRS
        if m in models_by_slug and a in cards_by_slug
    ]


@dataclass(frozen=True)
class CompareColumn:
    model: LLMModel
    accelerator: Accelerator
    quant: str
    gpus: int
    # The estimator's result as JSON types (as saved reports keep it); None with an error.
    result: dict[str, Any] | None
    error: str = ""
    choice: hardware.EngineChoice | None = None  # the card's default engine and backend


@dataclass(frozen=True)
class CompareRow:
    label: str
    kind: str  # "bytes" | "speed" | "seconds" | "tokens" | "count" | "verdict" | "share"
    values: list[Any]
    best: set[int]  # columns holding the best value (more than one on a tie)


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


def compare_columns(*, specs: Sequence[Any], context_tokens: int) -> list[CompareColumn]:
    """Each ColumnSpec estimated as the configurator would (measured sizes included);
    unknown slugs and estimator refusals come back as a column error."""
    models = {
        m.slug: m
        for m in LLMModel.objects.exclude(config={})
        .only(*MODEL_FIELDS)
        .prefetch_related("weights")
        .filter(slug__in={s.model_slug for s in specs})
    }
    cards = {
        a.slug: a
        for a in Accelerator.objects.only(*CARD_FIELDS).filter(
            slug__in={s.accelerator_slug for s in specs}
        )
    }
    matrix = hardware.support_matrix()
    return [_column(spec, models, cards, context_tokens, matrix) for spec in specs]


def _column(
    spec: Any,
    models: dict[str, LLMModel],
    cards: dict[str, Accelerator],
    context_tokens: int,
    matrix: hardware.SupportMatrix,
) -> CompareColumn:
    model, card = models.get(spec.model_slug), cards.get(spec.accelerator_slug)
    if model is None or card is None or not sizing.can_size_accelerator(card):
        return CompareColumn(
            model or LLMModel(slug=spec.model_slug, name=spec.model_slug),
            card or Accelerator(slug=spec.accelerator_slug, name=spec.accelerator_slug),
            spec.quant,
            spec.gpus,
            None,
            "unknown" if model is None or card is None else "unsized",
        )
    choice = matrix.default_for(card)
    if choice is None:
        return CompareColumn(model, card, spec.quant, spec.gpus, None, "no_engine")
    setup = sizing.Setup(
        quant=spec.quant,
        context_tokens=context_tokens,
        gpus=spec.gpus,
        engine=choice.engine,
        backend=choice.backend,
    )
    try:
        sized = sizing.size_setup(model=model, accelerator=card, setup=setup)
    except RequestError as exc:
        return CompareColumn(model, card, spec.quant, spec.gpus, None, exc.message, choice)
    result = result_to_dict(sized.result)
    return CompareColumn(model, card, spec.quant, spec.gpus, result, "", choice)


def _value(result: dict[str, Any] | None, path: str) -> Any:
    value: Any = result
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _fits(column: CompareColumn) -> bool:
    return _value(column.result, "fit.verdict") not in (None, "does_not_fit")


def _calibrated(column: CompareColumn) -> bool:
    return bool((column.result or {}).get("speed_calibrated", True))


def compare_rows(columns: Sequence[CompareColumn]) -> list[CompareRow]:
    """One row per figure; `best` marks the best value when the columns differ."""
    rows = []
    for label, path, kind, better in COMPARE_ROWS:
        values = [_value(c.result, path) for c in columns]
        if kind in ("speed", "seconds"):
            # No speed for a column that does not fit: nothing would run at that figure.
            values = [None if not _fits(c) else v for c, v in zip(columns, values, strict=True)]
        numbers = {
            i: (v["estimate"] if isinstance(v, dict) else v)
            for i, v in enumerate(values)
            if v is not None and not isinstance(v, str)
        }
        if kind in ("speed", "seconds"):
            # A speed without published measurements behind it is shown, never starred.
            numbers = {i: n for i, n in numbers.items() if _calibrated(columns[i])}
        best: set[int] = set()
        if better and len(set(numbers.values())) > 1:
            target = min(numbers.values()) if better == "low" else max(numbers.values())
            best = {i for i, n in numbers.items() if n == target}
        rows.append(CompareRow(label, kind, values, best))
    return rows


def explore_models_light() -> list[LLMModel]:
    """Slugs and names of the models with a config (the compare form's choices)."""
    return list(LLMModel.objects.exclude(config={}).only("slug", "name").order_by("name"))


def curated_cards() -> list[Accelerator]:
    """Curated cards for the compare form's suggestions; any other slug may be typed."""
    cards = Accelerator.objects.filter(curated=True, memory_gb__gt=0, bandwidth_gbps__gt=0)
    return list(cards.only("slug", "name", "vendor").order_by("vendor", "name"))
