"""The explore tables, built from rows already read: a model on every card (`CardTable`,
model_card_table), a card across every model (`ModelTable`, card_model_table), and a page
of either (`TablePage`). sizing_site.explore.selectors reads the rows, caches the tables
and pages them; nothing here reads the database but the sweep behind a table (cached per
model, context and ladder by catalog.sizing).

Each row answers the question of the page in one line: whether it fits, at which quant,
how fast (decode tok/s of one sequence with the calibration's low-high range), how sure
that speed is (`confidence`), and what a million output tokens cost (costs.RowCost).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from django.utils.translation import gettext as _

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel
from catalog.sizing import CardFit
from catalog.sizing.candidates import offers_context
from estimator.api import RequestError
from pricing.costs import usd_per_token_per_s
from sizing_site.explore.costs import Offer, RowCost, row_cost

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


# --- a page of a table ------------------------------------------------------------------


@dataclass(frozen=True)
class TablePage(Generic[R]):
    """One page of a table's rows (or of a card page's family groups): `number` from 1 to
    `pages`, `count` items in the whole table, `size` a page. Iterating gives the page's
    items; the templates' pagination reads the rest."""

    items: tuple[R, ...]
    number: int
    pages: int
    count: int
    size: int

    @classmethod
    def of(cls, items: Sequence[R], *, number: int, size: int) -> TablePage[R]:
        """Page `number` of `items`, `size` a page; a number past the last page gives the
        last (the sweeps API refuses it before: it compares the number asked for)."""
        pages = max(1, math.ceil(len(items) / size))
        number = min(max(number, 1), pages)
        start = (number - 1) * size
        return cls(tuple(items[start : start + size]), number, pages, len(items), size)

    @classmethod
    def whole(cls, items: Sequence[R]) -> TablePage[R]:
        """The whole table as its one page (a table as built, before a query pages it)."""
        return cls.of(items, number=1, size=max(1, len(items)))

    def __iter__(self) -> Iterator[R]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.pages

    @property
    def previous_page_number(self) -> int:
        return self.number - 1

    @property
    def next_page_number(self) -> int:
        return self.number + 1


# --- rows ---------------------------------------------------------------------------------


class _FitRow:
    """What both tables' rows say of their fit: whether a quant fits, and how sure."""

    fit: CardFit

    @property
    def fits(self) -> bool:
        return self.fit.quant is not None

    @property
    def confidence(self) -> str:
        return confidence(self.fit)


@dataclass(frozen=True)
class CardRow(_FitRow):
    accelerator: Accelerator
    fit: CardFit
    usd_per_token_per_s: float | None
    cost: RowCost | None = None

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
class ModelRow(_FitRow):
    model: LLMModel
    fit: CardFit
    cost: RowCost | None = None
    # The family's other models with the same figures (an Instruct and a base model, an
    # FP8 repack of the same config), folded into this row by fold_variants.
    variants: tuple[LLMModel, ...] = ()

    @property
    def is_toy(self) -> bool:
        return (self.model.params_total or 0) < TOY_PARAMS


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


def distinct_formats(rows: Iterable[CardRow | ModelRow]) -> list[str]:
    """The weights formats of the fitting `rows`, each once, in row order."""
    return list(dict.fromkeys(r.fit.quant for r in rows if r.fit.quant))


class _RankedFormats:
    """What a ranked table says of its formats. A speed ranking of rows at different
    formats compares different work (BF16 reads twice Q8_0's bytes per token), so the
    pages mark each row whose format differs from the first row's ("at BF16 vs Q5_K_M")
    rather than group by format, which would split one ranking into several."""

    rows: list[Any]
    top_speed: list[Any]

    @property
    def lead_quant(self) -> str:
        """The format of the table's first fitting row, which the others are marked
        against ("" when no row fits)."""
        return next(iter(distinct_formats(self.rows)), "")

    @property
    def speed_lead_quant(self) -> str:
        """The format of the fastest row of the speed list."""
        return next(iter(distinct_formats(self.top_speed)), "")

    @property
    def mixed_formats(self) -> bool:
        """Whether the table's fitting rows are at more than one format."""
        return len(distinct_formats(self.rows)) > 1


# --- a model on every card ---------------------------------------------------------------


@dataclass(frozen=True)
class CardTable(_RankedFormats):
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
    cards: int = 0  # cards the estimator can size, before the filters
    page: TablePage[CardRow] = field(default_factory=lambda: TablePage.whole([]))

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


def _cost_key(row: CardRow) -> float:
    return row.cost.usd_per_million if row.cost else math.inf


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
    (costs.cheapest_offers, costs.unit_powers) give each row its cost per 1M tokens;
    `matrix` spares reading the support matrix again. Raises estimator.api.RequestError
    (e.g. context too long)."""
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
    shown = sorted_rows(rows if show_all else [r for r in rows if r.fits], sort, CARD_SORTS)
    return _card_summary(rows, shown, cards=len(accelerators))


def _card_summary(rows: list[CardRow], shown: list[CardRow], *, cards: int) -> CardTable:
    """The table of `shown` (filtered and sorted) with the summary of every matching row."""
    fitting = [r for r in rows if r.fits]
    # Only speeds published measurements back are ranked: an uncalibrated card is never
    # the "fastest" nor in the top lists, however few cards a filter leaves.
    by_speed = [
        r for r in sorted_rows(fitting, "-speed", CARD_SORTS) if r.fit.calibrated_speed is not None
    ]
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
        rows=shown,
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
        cards=cards,
        page=TablePage.whole(shown),
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
    q: str = "",
    vendor: str = "",
    memory_min_gb: float | None = None,
    matrix: hardware.SupportMatrix | None = None,
) -> list[ContextOutlook]:
    """model_card_table's summary at each of `contexts` under the same card filters (the
    sweeps are cached like the page's own)."""
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
                q=q,
                vendor=vendor,
                memory_min_gb=memory_min_gb,
                matrix=matrix,
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
class ModelTable(_RankedFormats):
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
    # A page of the rows (the sweep) and of the family groups (the card page).
    page: TablePage[ModelRow] = field(default_factory=lambda: TablePage.whole([]))
    family_page: TablePage[FamilyGroup] = field(default_factory=lambda: TablePage.whole([]))


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
    matrix: hardware.SupportMatrix | None = None,
) -> ModelTable:
    """`accelerator` across every model with a config; a model whose maximum context is
    shorter than `context_tokens` (or whose config the estimator rejects) is skipped."""
    eligible = [m for m in models if offers_context(m, context_tokens)]
    sized = sizing.models_on_card(
        accelerator,
        eligible,
        quants=quants,
        context_tokens=context_tokens,
        matrix=matrix or hardware.support_matrix(),
    )
    fits = dict(zip((m.pk for m in eligible), sized, strict=True))
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
    groups = family_groups(shown)
    return ModelTable(
        rows=shown,
        candidates=len(rows),
        fitting=len(fitting),
        skipped=skipped,
        groups=groups,
        comfortable=len(comfortable),
        largest_comfortable=largest[0] if largest else None,
        fastest=grown[0] if grown else None,
        top_largest=fold_variants(largest)[:TOP_N],
        top_speed=fold_variants(grown)[:TOP_N],
        median_speed=median,
        median_of=median_of,
        confidence_counts=confidence_counts(fitting),
        page=TablePage.whole(shown),
        family_page=TablePage.whole(groups),
    )
