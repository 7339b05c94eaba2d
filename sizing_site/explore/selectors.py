"""Reads for the explore pages: a model across every card, a card across every model.

Every page loads its whole candidate set in a fixed number of queries and filters, sorts
and sums in Python: the sweep behind a page covers every card anyway (and is cached per
model, context and ladder by catalog.sizing), so the query count stays flat however
large the catalog grows.

Each row answers the question of the page in one line: whether it fits, at which quant,
how fast (decode tok/s of one sequence with the calibration's low-high range), how sure
that speed is (`confidence`), and what a million output tokens cost (`RowCost`: the
cheapest public cloud offer of the card, else owning it at pricing.costs' defaults).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from django.utils.translation import gettext as _

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel
from catalog.scoping import Owner
from catalog.sizing import CardFit
from catalog.sizing.candidates import (
    CARD_FIELDS,
    MODEL_FIELDS,
    Rung,
    ladder_down_to,
    offers_context,
)
from estimator import cost
from estimator.api import RequestError, result_to_dict
from pricing.costs import owned_ownership, owned_usd_per_million, usd_per_token_per_s
from pricing.models import CloudOffer
from sizing_site.explore.search import SearchResults, search_catalog

TOP_N = 10
SMALLEST_N = 5  # the model page's "smallest cards that fit" list
# Models below this many parameters are toys for a card page's "fastest" list: a 0.5B
# model decodes fastest on every card and says nothing about the card.
TOY_PARAMS = 3_000_000_000
R = TypeVar("R")

# Confidence of a row's speed, from the estimator's own calibration (estimator.speed):
# the low-high range is the estimate times the hold-out quantiles of the calibration group
# that covers the engine on this backend, so its width is how far published measurements
# of that group strayed from the model. A speed whose group does not name the backend
# (fit.calibrated False: factors fitted on other hardware) is "low" whatever its range.
# With today's calibration.json: llama.cpp CUDA consumer 1.54x -> high; llama.cpp CUDA
# datacenter 1.68x, Metal 1.75x, ROCm 1.86x, vLLM CUDA 2.45x -> medium; SGLang and
# TensorRT-LLM 3.44x -> low.
HIGH_CONFIDENCE_MAX_RATIO = 1.6  # high / low, about +-25 % around the estimate
MEDIUM_CONFIDENCE_MAX_RATIO = 2.5
CONFIDENCE_LEVELS = ("high", "medium", "low")


def confidence(fit: CardFit) -> str:
    """How sure a fitting row's decode speed is: "high", "medium" or "low" ("" without
    a speed). Low without a calibration group for this engine and backend, else by the
    range's high / low ratio against HIGH_ and MEDIUM_CONFIDENCE_MAX_RATIO."""
    speed = fit.decode_tokens_per_s
    if fit.quant is None or speed is None or speed.low <= 0:
        return ""
    if not fit.calibrated:
        return "low"
    ratio = speed.high / speed.low
    if ratio <= HIGH_CONFIDENCE_MAX_RATIO:
        return "high"
    if ratio <= MEDIUM_CONFIDENCE_MAX_RATIO:
        return "medium"
    return "low"


# --- cost per 1M output tokens -------------------------------------------------------


@dataclass(frozen=True)
class Offer:
    """A card's cheapest public on-demand cloud offer per GPU: usd_per_hour is one GPU's
    share of the instance's hour (instance price / gpu_count), what a one-card row pays."""

    usd_per_hour: float
    provider: str
    gpu_count: int


def cheapest_offers() -> dict[int, Offer]:
    """The cheapest public on-demand USD offer per accelerator and GPU-hour, in one query.
    Prices change without a catalog edit, so pages read this on every request (and key
    their cached part on it). Organisation offers stay out: the explore tables are shared
    by everyone."""
    rows = (
        CloudOffer.objects.public()
        .filter(accelerator__isnull=False, on_demand_per_hour__isnull=False, currency="USD")
        .order_by("accelerator_id", "on_demand_per_hour", "gpu_count", "provider__name")
        .values_list("accelerator_id", "on_demand_per_hour", "provider__name", "gpu_count")
    )
    offers: dict[int, Offer] = {}
    for card_id, per_hour, provider, gpus in rows:
        per_gpu = float(per_hour) / max(int(gpus), 1)
        known = offers.get(card_id)
        if known is None or per_gpu < known.usd_per_hour:
            offers[card_id] = Offer(per_gpu, provider, gpus)
    return offers


def offers_key(offers: Mapping[int, Offer]) -> tuple[object, ...]:
    """What a table reads of the cloud prices, which change without a catalog edit: the
    explore pages key their cached part on it, the sweeps API its ETag."""
    return tuple(sorted((k, o.usd_per_hour, o.provider, o.gpu_count) for k, o in offers.items()))


def table_filters(
    cleaned: Mapping[str, Any], *, ladder: Sequence[Rung]
) -> tuple[list[str], int, dict[str, Any]]:
    """An explore form's cleaned data as the table selectors take it: the ladder's quants
    down to the chosen quality floor, the context, and the other filters as keyword
    arguments (q, show_all, sort; vendor and memory_min_gb on a model page). The pages and
    the sweeps API (sizing_site.api.sweeps) read their forms through it."""
    data = dict(cleaned)
    return ladder_down_to(ladder, data.pop("quality")), data.pop("ctx"), data


def unit_powers(
    card_ids: Iterable[int] | None = None, organizations: Sequence[Owner] = ()
) -> dict[int, float | None]:
    """TDP (W) of the priced cards (of `card_ids`; public, and the `organizations`' own),
    one query: the owned cost needs it and the sweep's card rows do not load it."""
    cards = Accelerator.objects.visible_to(organizations).filter(price_usd__gt=0)
    if card_ids is not None:
        cards = cards.filter(pk__in=list(card_ids))
    return {pk: (float(tdp) if tdp else None) for pk, tdp in cards.values_list("pk", "tdp_w")}


@dataclass(frozen=True)
class RowCost:
    """USD per 1M output tokens at the row's decode speed (one sequence): renting the
    card's cheapest cloud instance (`basis` "cloud") or owning one card and its host
    (`basis` "owned": pricing.costs.owned_ownership's defaults). `usd_per_hour` is one
    GPU's share of the instance-hour, or the owned system's cost per busy hour."""

    usd_per_million: float
    basis: str
    usd_per_hour: float
    provider: str = ""


def row_cost(
    card: Accelerator,
    fit: CardFit,
    offers: Mapping[int, Offer],
    powers: Mapping[int, float | None],
) -> RowCost | None:
    """The cheapest cloud offer's cost per 1M tokens, else the owner's; None without a
    speed, or with neither an offer nor a price."""
    speed = fit.decode_tokens_per_s.estimate if fit.quant and fit.decode_tokens_per_s else None
    if not speed or speed <= 0:
        return None
    offer = offers.get(card.pk)
    if offer is not None:
        per_million = cost.usd_per_million_tokens(offer.usd_per_hour, speed)
        return RowCost(per_million, "cloud", offer.usd_per_hour, offer.provider)
    unit = hardware.owned_unit(card)
    power = powers.get(card.pk) if unit.basis in ("card", "system") else unit.power_w
    ownership = owned_ownership(unit.price_usd, power, 1, complete_system=not unit.host)
    owned = owned_usd_per_million(ownership, speed)
    if ownership is None or owned is None:
        return None
    return RowCost(owned, "owned", cost.ownership_usd_per_hour(ownership))


# --- a model on every card ---------------------------------------------------------------


@dataclass(frozen=True)
class CardRow:
    accelerator: Accelerator
    fit: CardFit
    usd_per_token_per_s: float | None
    cost: RowCost | None = None

    @property
    def fits(self) -> bool:
        return self.fit.quant is not None

    @property
    def confidence(self) -> str:
        return confidence(self.fit)

    @property
    def shortfall_bytes(self) -> int:
        """How much more memory one device would need (0 when it fits or has no engine)."""
        if self.fits or self.fit.verdict != "does_not_fit":
            return 0
        return max(0, self.fit.need_bytes - self.fit.usable_bytes)

    @property
    def devices_by_memory(self) -> int:
        """How many such cards hold the most compressed quant by memory alone (a tensor or
        layer split; the configurator checks the real figure), 1 when it fits."""
        if self.fits or self.fit.usable_bytes <= 0:
            return 1
        return math.ceil(self.fit.need_bytes / self.fit.usable_bytes)


@dataclass(frozen=True)
class ModelRow:
    model: LLMModel
    fit: CardFit
    cost: RowCost | None = None
    # The family's other models with the same figures (an Instruct and a base model, an
    # FP8 repack of the same config), folded into this row by fold_variants.
    variants: tuple[LLMModel, ...] = ()

    @property
    def fits(self) -> bool:
        return self.fit.quant is not None

    @property
    def confidence(self) -> str:
        return confidence(self.fit)

    @property
    def is_toy(self) -> bool:
        return (self.model.params_total or 0) < TOY_PARAMS


@dataclass(frozen=True)
class CardTable:
    rows: list[CardRow]  # filtered and sorted, cards that cannot run it only on request
    candidates: int  # cards matching the filters
    fitting: int
    smallest: CardRow | None
    fastest: CardRow | None
    top_speed: list[CardRow]
    top_price: list[CardRow]
    smallest_cards: list[CardRow] = field(default_factory=list)  # least memory first
    median_speed: float | None = None  # of the fitting cards with a calibrated speed
    median_of: int = 0
    nearest_miss: CardRow | None = None  # the (curated) card short of the least memory
    unpriced: int = 0  # fitting cards without a catalog price (left out of top_price)
    priced_unranked: int = 0  # fitting cards with a price but no calibrated speed
    cheapest_run: CardRow | None = None  # lowest cost per 1M tokens
    cheapest_buy: CardRow | None = None  # lowest purchase price that fits
    confidence_counts: dict[str, int] = field(default_factory=dict)
    # The fastest curated cards (the ones people buy): the page's links to the
    # configurator, the card page and compare start from them.
    top_curated: list[CardRow] = field(default_factory=list)

    @property
    def featured(self) -> CardRow | None:
        """The card the page's links open: the fastest curated card that fits, else the
        fastest, else the smallest."""
        return next(iter(self.top_curated), None) or self.fastest or self.smallest

    def fitting_rows(self) -> list[CardRow]:
        return [r for r in self.rows if r.fits]


def _matches(card: Accelerator, q: str) -> bool:
    needle = q.casefold()
    texts = [card.name, card.vendor, *(str(a) for a in card.aliases or [])]
    return any(needle in text.casefold() for text in texts)


def _fit_rank(fit: CardFit) -> int:
    return {"comfortable": 2, "tight": 1}.get(fit.verdict, 0) if fit.quant else 0


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
    "cost": lambda r: r.cost.usd_per_million if r.cost else None,
}
MODEL_SORTS: dict[str, Callable[[ModelRow], Any]] = {
    # The card page's default: what runs comfortably, largest first, then what runs tight.
    "comfort": lambda r: (_fit_rank(r.fit), r.model.params_total or 0),
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


def _cost_key(row: CardRow) -> float:
    return row.cost.usd_per_million if row.cost else math.inf


def median_speed(rows: Iterable[CardRow | ModelRow]) -> tuple[float | None, int]:
    """The median calibrated decode tok/s of the fitting rows, and how many it is of."""
    speeds = [r.fit.calibrated_speed for r in rows if r.fits and r.fit.calibrated_speed]
    return (statistics.median(speeds) if speeds else None), len(speeds)


def confidence_counts(rows: Iterable[CardRow | ModelRow]) -> dict[str, int]:
    counts = dict.fromkeys(CONFIDENCE_LEVELS, 0)
    for row in rows:
        if row.confidence:
            counts[row.confidence] += 1
    return counts


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
    offers: Mapping[int, Offer] | None = None,
    powers: Mapping[int, float | None] | None = None,
    matrix: hardware.SupportMatrix | None = None,
) -> CardTable:
    """`model` on every card, each under its own default engine (catalog.hardware); a card
    no engine in the catalog runs on is listed only with show_all. `offers` and `powers`
    (cheapest_offers, unit_powers) give each row its cost per 1M tokens; `matrix` spares
    reading the support matrix again. Raises estimator.api.RequestError (e.g. context too
    long)."""
    fits = sizing.model_on_cards(
        model,
        accelerators,
        quants=quants,
        context_tokens=context_tokens,
        matrix=matrix or hardware.support_matrix(),
    )
    offers, powers = offers or {}, powers or {}
    rows = [
        CardRow(
            card,
            fit,
            usd_per_token_per_s(card.price_usd, fit),
            row_cost(card, fit, offers, powers),
        )
        for card, fit in zip(accelerators, fits, strict=True)
        if (not q or _matches(card, q))
        and (not vendor or card.vendor == vendor)
        and (memory_min_gb is None or (card.capacity_gib or 0) >= memory_min_gb)
    ]
    fitting = [r for r in rows if r.fits]
    by_speed = sorted_rows(fitting, "-speed", CARD_SORTS)
    priced = [r for r in fitting if r.usd_per_token_per_s is not None]
    # Of equal memory, a curated card (one people buy) and then the faster one first.
    by_memory = sorted(
        fitting,
        key=lambda r: (
            r.accelerator.capacity_gib or 0,
            not r.accelerator.curated,
            -(r.fit.calibrated_speed or 0),
        ),
    )
    # The nearest miss among curated cards when one misses (a 4-chip Tesla M10 that is
    # 0.3 GiB short helps nobody choose), else among all.
    misses = [r for r in rows if r.shortfall_bytes > 0]
    misses = [r for r in misses if r.accelerator.curated] or misses
    median, median_of = median_speed(fitting)
    with_cost = [r for r in fitting if r.cost is not None]
    with_price = [r for r in fitting if r.accelerator.price_usd]
    return CardTable(
        rows=sorted_rows(rows if show_all else fitting, sort, CARD_SORTS),
        candidates=len(rows),
        fitting=len(fitting),
        smallest=by_memory[0] if by_memory else None,
        fastest=by_speed[0] if by_speed else None,
        top_speed=by_speed[:TOP_N],
        top_price=sorted_rows(priced, "price", CARD_SORTS)[:TOP_N],
        smallest_cards=by_memory[:SMALLEST_N],
        median_speed=median,
        median_of=median_of,
        nearest_miss=min(misses, key=lambda r: r.shortfall_bytes, default=None),
        unpriced=len(fitting) - len(with_price),
        priced_unranked=len(with_price) - len(priced),
        cheapest_run=min(with_cost, key=_cost_key, default=None),
        cheapest_buy=min(with_price, key=lambda r: r.accelerator.price_usd or 0, default=None),
        confidence_counts=confidence_counts(fitting),
        top_curated=[r for r in by_speed if r.accelerator.curated][:TOP_N],
    )


@dataclass(frozen=True)
class ContextOutlook:
    """The model page's filters at another context: how many cards fit, the smallest and
    the fastest of them; `limit` instead when the model reads fewer tokens than that."""

    context_tokens: int
    fitting: int = 0
    candidates: int = 0
    smallest: CardRow | None = None
    fastest: CardRow | None = None
    limit: int | None = None


def context_outlooks(
    *,
    model: LLMModel,
    accelerators: Sequence[Accelerator],
    quants: Sequence[str],
    contexts: Sequence[int],
    max_context: int,
    filters: Mapping[str, Any],
    matrix: hardware.SupportMatrix | None = None,
) -> list[ContextOutlook]:
    """model_card_table's summary at each of `contexts` (the sweeps are cached like the
    page's own)."""
    matrix = matrix or hardware.support_matrix()
    outlooks = []
    for ctx in contexts:
        if max_context and ctx > max_context:
            outlooks.append(ContextOutlook(ctx, limit=max_context))
            continue
        try:
            table = model_card_table(
                model=model,
                accelerators=accelerators,
                quants=quants,
                context_tokens=ctx,
                matrix=matrix,
                **{k: v for k, v in filters.items() if k in ("q", "vendor", "memory_min_gb")},
            )
        except RequestError:
            outlooks.append(ContextOutlook(ctx, limit=max_context or None))
            continue
        outlooks.append(
            ContextOutlook(ctx, table.fitting, table.candidates, table.smallest, table.fastest)
        )
    return outlooks


# --- a card across every model -------------------------------------------------------------


@dataclass(frozen=True)
class FamilyGroup:
    family: str
    rows: list[ModelRow]  # variants folded

    @property
    def lead(self) -> ModelRow:
        return self.rows[0]

    @property
    def models(self) -> int:
        return sum(1 + len(r.variants) for r in self.rows)


@dataclass(frozen=True)
class ModelTable:
    rows: list[ModelRow]
    candidates: int
    fitting: int
    skipped: list[tuple[LLMModel, str]]  # models the estimator refused, with its reason
    groups: list[FamilyGroup] = field(default_factory=list)  # rows by family, in sort order
    comfortable: int = 0
    largest_comfortable: ModelRow | None = None
    fastest: ModelRow | None = None  # of the models of TOY_PARAMS or more
    top_largest: list[ModelRow] = field(default_factory=list)
    top_speed: list[ModelRow] = field(default_factory=list)
    median_speed: float | None = None
    median_of: int = 0
    confidence_counts: dict[str, int] = field(default_factory=dict)


def _fold_key(row: ModelRow) -> tuple[object, ...]:
    """Variants: the same family, parameter counts, quant and verdict (their measured file
    sizes may differ a little between repos)."""
    model, fit = row.model, row.fit
    family = model.family or model.name
    return (family, model.params_total, model.params_active, fit.quant, fit.verdict)


def fold_variants(rows: Sequence[ModelRow]) -> list[ModelRow]:
    """`rows` with the models of a family that have the same figures folded into one row
    (its `variants`), in the order each first appears; the row kept is the variant with
    the shortest name (the plain model rather than a repack)."""
    folds: dict[tuple[object, ...], list[ModelRow]] = {}
    for row in rows:
        folds.setdefault(_fold_key(row), []).append(row)
    folded = []
    for same in folds.values():
        lead = min(same, key=lambda r: (len(r.model.name), r.model.name))
        folded.append(replace(lead, variants=tuple(r.model for r in same if r is not lead)))
    return folded


def family_groups(rows: Sequence[ModelRow]) -> list[FamilyGroup]:
    """`rows` (already sorted), variants folded, grouped by family in the order each
    family first appears: under the default sort, the family of the largest model that
    runs comfortably comes first."""
    groups: dict[str, list[ModelRow]] = {}
    for row in fold_variants(rows):
        groups.setdefault(row.model.family or row.model.name, []).append(row)
    return [FamilyGroup(family, folded) for family, folded in groups.items()]


def card_model_table(
    *,
    accelerator: Accelerator,
    models: Sequence[LLMModel],
    quants: Sequence[str],
    context_tokens: int,
    q: str = "",
    show_all: bool = False,
    sort: str = "-comfort",
    offers: Mapping[int, Offer] | None = None,
    powers: Mapping[int, float | None] | None = None,
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
    offers, powers = offers or {}, powers or {}
    rows, skipped = [], []
    for model in models:
        if q and not any(q.casefold() in t.casefold() for t in (model.name, model.family)):
            continue
        fit = fits.get(model.pk, _("its published context is shorter"))
        if isinstance(fit, str):
            skipped.append((model, fit))
        else:
            rows.append(ModelRow(model, fit, row_cost(accelerator, fit, offers, powers)))
    fitting = [r for r in rows if r.fits]
    shown = sorted_rows(rows if show_all else fitting, sort, MODEL_SORTS)
    comfortable = [r for r in fitting if r.fit.verdict == "comfortable"]
    largest = sorted(comfortable, key=lambda r: r.model.params_total or 0, reverse=True)
    grown = sorted_rows([r for r in fitting if not r.is_toy], "-speed", MODEL_SORTS)
    grown = [r for r in grown if r.fit.calibrated_speed is not None]
    median, median_of = median_speed(fitting)
    return ModelTable(
        rows=shown,
        candidates=len(rows),
        fitting=len(fitting),
        skipped=skipped,
        groups=family_groups(shown),
        comfortable=len(comfortable),
        largest_comfortable=largest[0] if largest else None,
        fastest=grown[0] if grown else None,
        top_largest=fold_variants(largest)[:TOP_N],
        top_speed=fold_variants(grown)[:TOP_N],
        median_speed=median,
        median_of=median_of,
        confidence_counts=confidence_counts(fitting),
    )


def search(*, q: str, limit: int = 8, organizations: Sequence[Owner] = ()) -> SearchResults:
    """Models and cards matching `q` by name, alias or fuzzily, and "MODEL on GPU" pairs
    (sizing_site.explore.search); the public name index is cached per catalog version, the
    `organizations`' own rows are read afresh."""
    return search_catalog(q, limit=limit, organizations=organizations)


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
