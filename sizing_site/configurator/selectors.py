"""Reads for the configurator: the two catalog rows, then every figure from the sizing
service (catalog.sizing). The query count is fixed (model + its weights, accelerator,
curated accelerators, offers), whatever the catalog's size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from django.db.models import Prefetch
from django.utils.translation import get_language

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel, ModelWeights, Segment
from catalog.sizing.cache import remembered
from catalog.sizing.candidates import default_floor, ladder_down_to, quant_ladder
from estimator import cost
from estimator.api import request_to_dict, result_to_dict
from estimator.recommend import PlanStep
from pricing import costs
from pricing import selectors as pricing_selectors
from sizing_site.configurator import commands

FAQ_CONTEXT_TOKENS = 32768


def configuration_rows(*, model_slug: str, accelerator_slug: str) -> tuple[LLMModel, Accelerator]:
    """Raises LLMModel.DoesNotExist or Accelerator.DoesNotExist."""
    weights = Prefetch("weights", queryset=ModelWeights.objects.order_by("format", "quant"))
    model = LLMModel.objects.prefetch_related(weights).get(slug=model_slug)
    return model, Accelerator.objects.get(slug=accelerator_slug)


def curated_accelerators() -> list[Accelerator]:
    """The curated cards, kept in the shared sizing cache (catalog rows only): every setup
    the cache has not seen yet sizes against them."""
    return remembered(
        "configurator-curated",
        (),
        lambda: list(Accelerator.objects.filter(curated=True).order_by("vendor", "name")),
    )


def support_matrix() -> hardware.SupportMatrix:
    """hardware.support_matrix() (two queries), kept in the shared sizing cache."""
    return remembered("configurator-matrix", (), hardware.support_matrix)


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
    commands: dict[str, commands.LaunchCommand]


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
    quant = sized.setup.quant
    repo = next((w.repo for w in model.weights.all() if w.quant == quant and w.repo), "")
    gguf = sizing.is_gguf(quant)
    launch = commands.launch_config(
        request_to_dict(sized.request),
        result_to_dict(sized.result),
        hf_repo=model.hf_repo or model.slug,
        gguf_repo=repo if gguf else "",
        weights_repo="" if gguf else repo,
        layers=(sized.offloaded_layers, sized.model_layers),
        backend=sized.backend,
    )
    memory = DeviceMemory(
        hardware.device_memory_bytes(accelerator),
        hardware.memory_basis(accelerator),
        sized.devices,
    )
    usable = sized.result.usable_bytes_per_device * sized.devices
    return ConfigurationResults(sized, usable, memory, commands.launch_commands(launch))


@dataclass(frozen=True)
class CardPick:
    """A recommended card, its fit (the explore tables' CardFit) and its calibrated decode
    speed of one sequence."""

    accelerator: Accelerator
    fit: sizing.CardFit
    decode_tokens_per_s: float


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
        CardPick(card, fit, fit.calibrated_speed)
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
    *, accelerator: Accelerator, sized: sizing.Sizing, ownership: cost.Ownership | None
) -> ConfigurationCosts:
    """Public cloud offers of this accelerator with at least the configured GPUs (one
    query) and their cost per 1M output tokens; the cheapest hourly USD offer; owning the
    hardware (`ownership`, None: not given) against renting that offer for the same hours.
    Nothing runs a configuration that does not fit, so it gets no offers."""
    if not sized.fits:
        return ConfigurationCosts([], None, None)
    offers = costs.offer_costs(
        pricing_selectors.offers_for(accelerator=accelerator, gpu_count=sized.setup.gpus),
        one_sequence_tokens_per_s=sized.result.decode_tokens_per_s.estimate,
        all_sequences_tokens_per_s=sized.result.aggregate_decode_tokens_per_s.estimate,
    )
    usd = [row for row in offers if row.offer.currency == "USD"]
    cloud = min(usd, key=lambda row: row.per_hour) if usd else None
    compared = None
    if cloud is not None and ownership is not None:
        compared = costs.rent_vs_buy(ownership, cloud)
    return ConfigurationCosts(offers, cloud, compared)


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


def configuration_analysis(
    *,
    model: LLMModel,
    accelerator: Accelerator,
    sized: sizing.Sizing,
    max_context_tokens: int,
    ownership: cost.Ownership | None,
) -> ConfigurationAnalysis:
    """The deeper sections: quant matrix, memory by context, recommendations, cloud offers
    and rent vs buy, make-it-fit, KV tuning, fine-tuning, FAQ. Several estimates each, so
    the page loads them after the main figures (an HTMX partial; inline without JavaScript).
    What depends only on the catalog and the setup is kept in the shared sizing cache;
    prices and rent-or-buy are read fresh."""
    spent = configuration_costs(accelerator=accelerator, sized=sized, ownership=ownership)
    analysis = remembered(
        "configurator-analysis",
        (model.pk, accelerator.pk, sized.setup, max_context_tokens, get_language()),
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
    return ConfigurationAnalysis(
        costs=ConfigurationCosts([], None, None),  # filled per request
        recommended=recommended,
        matrix=sizing.quant_matrix(sized, files, cards),
        memory_by_context=points,
        faq_point=next((p for p in points if p.context_tokens == FAQ_CONTEXT_TOKENS), None),
        plan=sizing.make_it_fit(sized),
        kv_alternatives=sizing.kv_alternatives(sized),
        finetune=sizing.finetune_memory(sized, cards),
        datacenter=accelerator.segment == Segment.DATACENTER,
    )
