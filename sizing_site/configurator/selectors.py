"""Reads for the configurator: every figure from the sizing service (catalog.sizing) for
the two catalog rows configurator.rows reads (kept per process, as are the curated cards
and the support matrix). The query count is fixed (offers at most), whatever the
catalog's size. The public offers of a card
with at least a GPU count are one query, kept in the shared cache under the catalog and
price versions (offer_rows): the results part reads the cheapest of them (the answer
panel), the analysis part every one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from django.utils.translation import get_language

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel, Segment
from catalog.sizing.cache import UNREACHABLE, remembered
from catalog.sizing.candidates import default_floor, ladder_down_to, quant_ladder
from catalog.sizing.requests import family_ladder, native_format
from estimator import cost
from estimator.api import RequestError
from estimator.engines import runs_gguf
from estimator.recommend import PlanStep
from pricing import costs
from pricing import selectors as pricing_selectors
from pricing.models import CloudOffer
from pricing.versions import price_version
from sizing_site.configurator import commands
from sizing_site.configurator.rows import curated_accelerators, support_matrix

FAQ_CONTEXT_TOKENS = 32768
# Board counts the FAQ tries for "how many GPUs" (the form allows up to 64).
GPU_STEPS = (1, 2, 4, 8)
# Bumped when a cached value's shape changes, so a deploy never reads an old pickle.
CACHE_SHAPE = 3


@dataclass(frozen=True)
class PageScope:
    """What the configurator offers for a model on a card: the longest context (None when
    the estimator cannot read the model's config), whether the card has the figures to be
    sized, and the engines that run on it, its default first (not looked up when the pair
    cannot be sized anyway)."""

    max_context_tokens: int | None
    sizeable_card: bool
    engines: tuple[hardware.EngineChoice, ...] = ()


def page_scope(*, model: LLMModel, accelerator: Accelerator) -> PageScope:
    """Kept in the shared sizing cache per model and card: it reads catalog rows only (the
    support matrix costs two queries)."""
    return remembered(
        "configurator-scope",
        (model.pk, accelerator.pk),
        lambda: _page_scope(model=model, accelerator=accelerator),
    )


def _page_scope(*, model: LLMModel, accelerator: Accelerator) -> PageScope:
    limit = sizing.model_context_limit(model) if model.config else None
    sizeable = sizing.can_size_accelerator(accelerator)
    if limit is None or not sizeable:
        return PageScope(limit, sizeable)
    return PageScope(limit, sizeable, tuple(support_matrix().default_first(accelerator)))


@dataclass(frozen=True)
class DeviceMemory:
    """The memory one device reports to engines, which figure it comes from, and how many
    devices the setup has."""

    bytes: int
    basis: str  # hardware.memory_basis: "reported" | "built" | "assumed_binary"
    devices: int


@dataclass(frozen=True)
class ConfigurationResults:
    """The main estimate and what is read straight off it."""

    sized: sizing.Sizing
    usable_bytes: int  # all devices together: the memory bar's mark (configurator_charts)
    device_memory: DeviceMemory
    commands: dict[str, commands.ShownCommand]


def configuration_results(
    *, model: LLMModel, accelerator: Accelerator, setup: sizing.Setup
) -> ConfigurationResults:
    """Size the setup (quant "" takes the best that fits) and read the page's main figures
    and launch commands off it; kept in the shared sizing cache per model, card, setup and
    language (the commands' notes are translated). Raises RequestError."""
    return remembered(
        "configurator-results",
        (model.pk, accelerator.pk, setup, get_language()),
        lambda: _configuration_results(model=model, accelerator=accelerator, setup=setup),
    )


def _configuration_results(
    *, model: LLMModel, accelerator: Accelerator, setup: sizing.Setup
) -> ConfigurationResults:
    sized = sizing.size_setup(model=model, accelerator=accelerator, setup=setup)
    memory = DeviceMemory(
        hardware.device_memory_bytes(accelerator),
        hardware.memory_basis(accelerator),
        sized.devices,
    )
    usable = sized.result.usable_bytes_per_device * sized.devices
    launch = commands.launch_commands(model, sized)
    return ConfigurationResults(sized, usable, memory, launch)


@dataclass(frozen=True)
class CardPick:
    """A recommended card, its fit (the explore tables' CardFit) and its calibrated decode
    speed of one sequence."""

    accelerator: Accelerator
    fit: sizing.CardFit
    decode_tokens_per_s: float
    base_price: bool = False  # its catalog price is a base configuration's (pricing.costs)


@dataclass(frozen=True)
class Recommendations:
    fastest: CardPick | None
    cheapest: CardPick | None  # by purchase price
    apple: CardPick | None  # the Apple machine with the least memory
    cloud: costs.OfferCost | None  # the cheapest hourly USD offer (configuration_costs)


def recommendations(
    *,
    model: LLMModel,
    cards: Sequence[Accelerator],
    context_tokens: int,
    matrix: hardware.SupportMatrix,
    cloud: costs.OfferCost | None = None,
) -> Recommendations:
    """Best single card (fastest that fits), cheapest fit (purchase price) and the smallest
    Apple machine that fits, each under the card's own default engine with the least
    compressed quant that fits it: the explore tables' sweep (sizing.model_on_cards), so
    a card's figure here is the one every other page shows."""
    ladder = quant_ladder()
    quants = ladder_down_to(ladder, default_floor(ladder))
    sizable = [c for c in cards if sizing.can_size_accelerator(c)]
    fits = sizing.model_on_cards(
        model, sizable, quants=quants, context_tokens=context_tokens, matrix=matrix
    )
    # Only speeds published measurements back are ranked (CardFit.calibrated_speed).
    picks = [
        CardPick(card, fit, fit.calibrated_speed, costs.base_configuration_price(card))
        for card, fit in zip(sizable, fits, strict=True)
        if fit.quant is not None and fit.calibrated_speed is not None
    ]
    apple = [p for p in picks if p.accelerator.vendor.lower() == "apple"]
    priced = [p for p in picks if p.accelerator.price_usd]
    return Recommendations(
        fastest=max(picks, key=lambda p: p.decode_tokens_per_s, default=None),
        cheapest=min(priced, key=lambda p: p.accelerator.price_usd or 0, default=None),
        apple=min(apple, key=lambda p: p.accelerator.memory_gb or 0, default=None),
        cloud=cloud,
    )


@dataclass(frozen=True)
class ConfigurationCosts:
    offers: list[costs.OfferCost]
    cloud: costs.OfferCost | None  # the cheapest hourly USD offer
    rent_vs_buy: cost.RentVsBuy | None  # owning against renting `cloud`


def configuration_costs(
    *,
    accelerator: Accelerator,
    sized: sizing.Sizing,
    ownership: cost.Ownership | None,
    hours_per_day: float | None = None,
) -> ConfigurationCosts:
    """Public cloud offers of this accelerator with at least the configured GPUs (one
    query), their cost per 1M output tokens and, with `hours_per_day`, a month's rent; the
    cheapest hourly USD offer; owning the hardware (`ownership`, None: not given) against
    renting that offer for the same hours. Nothing runs a configuration that does not fit,
    so it gets no offers."""
    if not sized.fits:
        return ConfigurationCosts([], None, None)
    offers = costs.offer_costs(
        offer_rows(accelerator=accelerator, gpu_count=sized.setup.gpus),
        one_sequence_tokens_per_s=sized.result.decode_tokens_per_s.estimate,
        all_sequences_tokens_per_s=sized.result.aggregate_decode_tokens_per_s.estimate,
        hours_per_day=hours_per_day,
        gpus=sized.setup.gpus,
    )
    usd = [row for row in offers if row.offer.currency == "USD"]
    cloud = min(usd, key=lambda row: row.per_hour) if usd else None  # the setup's share
    compared = None
    if cloud is not None and ownership is not None:
        compared = costs.rent_vs_buy(ownership, cloud)
    return ConfigurationCosts(offers, cloud, compared)


# What the offers table and the answer panel read of an offer (and its provider's row):
# no accelerator or organization rows, whose JSON columns cost more to load and keep than
# the rest of the offer.
OFFER_FIELDS = (
    "id",
    "sku",
    "region",
    "gpu_count",
    "on_demand_per_hour",
    "spot_per_hour",
    "currency",
    "billing_granularity",
    "checked_at",
    "source",  # is_live, is_stale: only a live feed's price goes stale
    "source_note",  # source_url
    "provider__name",
    "provider__slug",
    "provider__website",
    "provider__billing_model",
)


def offer_rows(*, accelerator: Accelerator, gpu_count: int) -> list[CloudOffer]:
    """The public offers of `accelerator` with at least `gpu_count` GPUs, cheapest GPU-hour
    first (pricing.selectors.offers_for): one query, kept in the shared cache under the
    catalog version (key_for) and the price version (pricing.versions), so a price change
    or a catalog edit is seen on the next request. Public offers only: an organisation's
    negotiated offers are never read here, so no entry holds an organisation's prices (the
    key still names the card's owner, as every key names the rows it was read for).
    Without a reachable cache the query runs every time."""
    version = price_version()
    if version == UNREACHABLE:
        return _offer_rows(accelerator, gpu_count)
    parts = (accelerator.pk, accelerator.organization_id, gpu_count, version, CACHE_SHAPE)
    return remembered("configurator-offers", parts, lambda: _offer_rows(accelerator, gpu_count))


def _offer_rows(accelerator: Accelerator, gpu_count: int) -> list[CloudOffer]:
    # Built only on a miss: building the query costs more than reading the entry.
    query = pricing_selectors.offers_for(accelerator=accelerator, gpu_count=gpu_count)
    return list(query.select_related(None).select_related("provider").only(*OFFER_FIELDS))


def cheapest_offer(*, accelerator: Accelerator, sized: sizing.Sizing) -> costs.OfferCost | None:
    """The answer panel's cloud offer: the cheapest public USD offer with at least the
    configured GPUs (offer_rows), priced like configuration_costs' rows. Every offer runs
    the same setup at the same speed, so the cheapest hour is the cheapest 1M tokens, and
    the offer is configuration_costs' `cloud`. None when nothing fits or nothing is offered."""
    if not sized.fits:
        return None
    offer = cheapest_offer_row(accelerator=accelerator, gpu_count=sized.setup.gpus)
    if offer is None:
        return None
    return offer_cost(offer=offer, sized=sized)


def cheapest_offer_row(*, accelerator: Accelerator, gpu_count: int) -> CloudOffer | None:
    """The cheapest public USD offer per GPU-hour with at least `gpu_count` of the card
    (the first USD row of offer_rows; the setup pays its GPUs' share, costs.offer_costs)."""
    rows = offer_rows(accelerator=accelerator, gpu_count=gpu_count)
    return next((row for row in rows if row.currency == "USD"), None)


def offer_cost(*, offer: CloudOffer, sized: sizing.Sizing) -> costs.OfferCost:
    """An offer priced at the sized setup's speeds, as configuration_costs prices its rows."""
    [row] = costs.offer_costs(
        [offer],
        one_sequence_tokens_per_s=sized.result.decode_tokens_per_s.estimate,
        all_sequences_tokens_per_s=sized.result.aggregate_decode_tokens_per_s.estimate,
        gpus=sized.setup.gpus,
    )
    return row


@dataclass(frozen=True)
class Answer:
    """The answer panel at the top of the results: the fit in plain figures, and the cost
    per 1M output tokens at the aggregate decode speed, from the cheapest cloud offer or,
    without one, from owning the hardware (pricing.costs.owned_usd_per_million). Read per
    request: prices change without a catalog edit."""

    spare_bytes: int  # per GPU: what is left (0 when it does not fit)
    short_bytes: int  # per GPU: what is missing (0 when it fits), a positive figure
    decode_rounded: int  # tok/s of one sequence, whole (plural forms need an integer)
    cloud: costs.OfferCost | None
    owned_per_million: float | None
    ownership: cost.Ownership | None  # the assumptions behind owned_per_million
    typed_price: bool  # the visitor typed the hardware price
    base_price: bool  # the catalog price it uses is a base configuration's
    # vLLM-like engines: the same hour's price per 1M output tokens at the serving point
    # (result.serving["at_users"]: the most users that get 20 tok/s and a 1 s first token)
    serving_per_million: float | None = None
    serving_users: int = 0
    # Whether anything runs at all (the verdict is not does_not_fit): a vLLM-like engine
    # whose KV cache cannot hold one sequence does not start with memory to spare.
    runs: bool = True
    # The most sequences of the setup's context that fit at once when the asked count is
    # the cause (_fitting_sequences); 0 when it is not.
    fitting_sequences: int = 0

    @property
    def per_million(self) -> float | None:
        """The panel's cost per 1M output tokens: the cloud's, else the owner's."""
        if self.cloud is not None and self.cloud.per_million_all is not None:
            return self.cloud.per_million_all
        return self.owned_per_million

    @property
    def from_cloud(self) -> bool:
        return self.cloud is not None and self.cloud.per_million_all is not None

    @property
    def busy_percent(self) -> float | None:
        return None if self.ownership is None else self.ownership.utilization * 100

    @property
    def years(self) -> float | None:
        months = None if self.ownership is None else self.ownership.amortization_months
        return None if not months else months / 12


def configuration_answer(
    *,
    accelerator: Accelerator,
    sized: sizing.Sizing,
    cloud: costs.OfferCost | None,
    ownership: cost.Ownership | None,
    typed_price: bool = False,
) -> Answer:
    """The panel's figures (no query): `cloud` from cheapest_offer or configuration_costs,
    `ownership` the owner's assumptions (RentBuyForm.owner_cost_basis; None: no price)."""
    result = sized.result
    reserve = result.fit.reserve_bytes
    owned = None
    if sized.fits:
        owned = costs.owned_usd_per_million(
            ownership, result.aggregate_decode_tokens_per_s.estimate
        )
    serving_cost, users = _serving_cost(result, cloud if sized.fits else None, ownership)
    return Answer(
        spare_bytes=max(reserve, 0),
        short_bytes=_short_bytes(result),
        decode_rounded=round(result.decode_tokens_per_s.estimate),
        cloud=cloud if sized.fits else None,
        owned_per_million=owned,
        ownership=ownership if owned is not None else None,
        typed_price=typed_price,
        base_price=not typed_price and costs.base_configuration_price(accelerator),
        serving_per_million=serving_cost if sized.fits else None,
        serving_users=users,
        runs=sized.fits,
        fitting_sequences=_fitting_sequences(sized),
    )


def _fitting_sequences(sized: sizing.Sizing) -> int:
    """The estimator's max_concurrent_sequences (sequences of the setup's context that fit
    the engine's default budget at once) when the asked sequences are what stops the setup
    (does_not_fit) or what needs start flags (tight, within the default margin) and at
    least one fits; 0 otherwise: one sequence asked, or not even one fits (the context or
    the weights are the cause then)."""
    result = sized.result
    if result.fit.verdict != "does_not_fit" and not result.fit.within_default_margin:
        return 0
    most = result.max_concurrent_sequences
    return most if 1 <= most < sized.setup.sequences else 0


def _short_bytes(result: Any) -> int:
    """What each GPU lacks, against the budget the pages name ("the engine may use"): the
    need over usable_bytes_per_device when the setup does not fit; 0 when it fits, a tight
    setup within the engine's default margin included (its reserve is negative, but its
    start flags make it run: estimator.memory.start_settings)."""
    if result.fit.verdict != "does_not_fit":
        return 0
    return max(-result.fit.reserve_bytes, 0)


def _serving_cost(
    result: Any, cloud: costs.OfferCost | None, ownership: cost.Ownership | None
) -> tuple[float | None, int]:
    """The panel's hourly price (the cloud offer's share, else owning) over the serving
    point's aggregate tokens/s (estimator.api.extras.serving_section), and its users."""
    point = (result.serving or {}).get("at_users")
    if point is None:
        return None, 0
    speed = float(point["aggregate_tokens_per_s"].estimate)
    if cloud is not None:
        per_hour: float | None = cloud.per_hour
    elif ownership is not None:
        per_hour = cost.ownership_usd_per_hour(ownership)
    else:
        per_hour = None
    if per_hour is None or speed <= 0:
        return None, int(point["users"])
    return cost.usd_per_million_tokens(per_hour, speed), int(point["users"])


@dataclass(frozen=True)
class GpusNeeded:
    """The fewest boards of the card (GPU_STEPS) that hold `quant` at `context_tokens`
    without offload; None: more than the last step, or the engine refuses every count."""

    quant: str
    context_tokens: int
    gpus: int | None


@dataclass(frozen=True)
class FaqFigures:
    """The FAQ's figures that take more than a glance at the result: the least compressed
    quant that fits one card (from the quant matrix) and how many cards the full-precision
    weights and the model's longest context need."""

    best_quant: sizing.QuantRow | None
    full_precision: GpusNeeded | None
    full_context: GpusNeeded | None  # None when the setup already runs the longest context


def _gpus_needed(
    *, model: LLMModel, accelerator: Accelerator, setup: sizing.Setup, quant: str, context: int
) -> GpusNeeded:
    """Kept in the shared sizing cache per model, card and the setup the trials start
    from (the quant and context asked, no offload; the GPU count is the trials' own), so
    setups that differ only in GPUs, offload or (for the longest context) context share
    it."""
    # every offload setting at its default (a percentage, layers, MoE experts): all on the GPUs
    no_offload: dict[str, Any] = {
        f.name: f.default for f in fields(sizing.Setup) if f.name.startswith("offload")
    }
    base = replace(setup, quant=quant, context_tokens=context, gpus=1, **no_offload)
    return remembered(
        "configurator-gpus-needed",
        (model.pk, accelerator.pk, base),
        lambda: _gpus_trials(model=model, accelerator=accelerator, base=base),
    )


def _gpus_trials(*, model: LLMModel, accelerator: Accelerator, base: sizing.Setup) -> GpusNeeded:
    quant, context = base.quant, base.context_tokens
    for gpus in GPU_STEPS:
        trial = replace(base, gpus=gpus)
        try:
            if sizing.size_setup(model=model, accelerator=accelerator, setup=trial).fits:
                return GpusNeeded(quant, context, gpus)
        except RequestError:  # e.g. a tensor-parallel size the model's heads do not split by
            continue
    return GpusNeeded(quant, context, None)


def faq_figures(
    *,
    model: LLMModel,
    accelerator: Accelerator,
    sized: sizing.Sizing,
    matrix: Sequence[sizing.QuantRow],
    max_context_tokens: int,
) -> FaqFigures:
    """Best quant: the first of the engine family's quality ladder whose matrix row (one
    card, no offload) fits. GPUs: size_setup at 1, 2, 4, 8 boards (at most eight estimates
    each), BF16 at the setup's context, and the setup's quant at the model's maximum."""
    setup = sized.setup
    fitting = {row.quant: row for row in matrix if row.verdict != "does_not_fit"}
    ladder = family_ladder(setup.engine, native_format(model.config or {}))
    best = next((fitting[q] for q in ladder if q in fitting), None)
    full = "BF16" if runs_gguf(setup.engine) else "bf16"
    precision = _gpus_needed(
        model=model,
        accelerator=accelerator,
        setup=setup,
        quant=full,
        context=setup.context_tokens,
    )
    longest = None
    if setup.context_tokens < max_context_tokens:
        longest = _gpus_needed(
            model=model,
            accelerator=accelerator,
            setup=setup,
            quant=setup.quant,
            context=max_context_tokens,
        )
    return FaqFigures(best, precision, longest)


@dataclass(frozen=True)
class ConfigurationAnalysis:
    """The deeper sections of the page."""

    costs: ConfigurationCosts
    recommended: Recommendations
    matrix: list[sizing.QuantRow]
    memory_by_context: list[sizing.ContextPoint]  # drawn by configurator_charts
    faq_point: sizing.ContextPoint | None  # at FAQ_CONTEXT_TOKENS
    plan: list[PlanStep]  # make it fit; empty when it fits
    kv_alternatives: list[sizing.KvAlternative]
    finetune: list[sizing.FinetuneRow]
    datacenter: bool
    faq: FaqFigures


def configuration_analysis(
    *,
    model: LLMModel,
    accelerator: Accelerator,
    sized: sizing.Sizing,
    max_context_tokens: int,
    ownership: cost.Ownership | None,
    hours_per_day: float | None = None,
) -> ConfigurationAnalysis:
    """The deeper sections: quant matrix, memory by context, recommendations, cloud offers
    and rent vs buy, make-it-fit, KV tuning, fine-tuning, FAQ. Several estimates each, so
    the page loads them after the main figures (an HTMX partial; inline without JavaScript).
    What depends only on the catalog and the setup is kept in the shared sizing cache;
    prices and rent-or-buy are read fresh."""
    spent = configuration_costs(
        accelerator=accelerator, sized=sized, ownership=ownership, hours_per_day=hours_per_day
    )
    analysis = remembered(
        "configurator-analysis",
        (model.pk, accelerator.pk, sized.setup, max_context_tokens, get_language(), CACHE_SHAPE),
        lambda: _catalog_analysis(
            model=model, accelerator=accelerator, sized=sized, max_context_tokens=max_context_tokens
        ),
    )
    return replace(
        analysis, costs=spent, recommended=replace(analysis.recommended, cloud=spent.cloud)
    )


def _catalog_analysis(
    *, model: LLMModel, accelerator: Accelerator, sized: sizing.Sizing, max_context_tokens: int
) -> ConfigurationAnalysis:
    points = sizing.memory_by_context(sized, max_context_tokens)
    curated = curated_accelerators()
    matrix = support_matrix()
    files = sizing.measured_bytes(sizing.measured_weights(model))
    cards = sizing.smallest_cards(sized.request, curated, files, matrix)
    recommended = recommendations(
        model=model, cards=curated, context_tokens=sized.setup.context_tokens, matrix=matrix
    )
    quants = sizing.quant_matrix(sized, files, cards)
    return ConfigurationAnalysis(
        costs=ConfigurationCosts([], None, None),  # filled per request
        recommended=recommended,
        matrix=quants,
        memory_by_context=points,
        faq_point=next((p for p in points if p.context_tokens == FAQ_CONTEXT_TOKENS), None),
        plan=sizing.make_it_fit(sized),
        kv_alternatives=sizing.kv_alternatives(sized),
        finetune=sizing.finetune_memory(sized, cards),
        datacenter=accelerator.segment == Segment.DATACENTER,
        faq=faq_figures(
            model=model,
            accelerator=accelerator,
            sized=sized,
            matrix=quants,
            max_context_tokens=max_context_tokens,
        ),
    )
