"""What the sweeps run over: every card the estimator can size, every model with a
config, and the quality ladder of GGUF quants, with the explore pages' default context.
The explore tables and the cache warm-up (catalog.sizing.warm) read the same lists, so a
warmed entry is the one a page asks for."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db.models import QuerySet

from catalog import selectors as catalog_selectors
from catalog.models import Accelerator, LLMModel, QuantFormat, WeightsFamily
from catalog.scoping import Owner
from catalog.sizing.cache import remembered, remembered_here
from catalog.sizing.specs import estimator_knows, published_context_tokens
from estimator import quality

# The explore pages' context unless the visitor sets one (a model page: at most the
# model's own limit).
DEFAULT_CONTEXT_TOKENS = 8192

# What the tables show of a card, and what the estimator needs (catalog.sizing.requests).
CARD_FIELDS = (
    "id",
    "slug",
    "name",
    "vendor",
    "aliases",
    "memory_gb",
    "memory_kind",
    "bandwidth_gbps",
    "fp16_tflops",
    "fp8_tflops",
    "fp4_tflops",
    "int8_tops",
    "interconnect_gbps",
    "segment",
    "release_date",
    "price_usd",
    "price_configuration",
    "curated",
    # owning it (catalog.hardware.owned_unit): SXM / OAM modules at their server's price
    "form_factor",
    "tdp_w",
    "server_price_usd",
    "server_modules",
    "server_power_w",
    "memory_gib",
    "memory_reported_gib",
    "memory_type",
    "architecture",
    "chips_per_board",
    "default_engine_id",
    "organization_id",  # an organisation's own card is marked as such
)
MODEL_FIELDS = (
    "id",
    "slug",
    "name",
    "family",
    "publisher",
    "params_total",
    "params_active",
    "max_context_tokens",
    "rope_scaling_max_context_tokens",
    "config",
    "updated",
    "organization_id",  # an organisation's own model is marked as such
)
# Beyond 16 bits (F32) a GGUF doubles BF16's memory for no quality a reader could use.
MAX_LADDER_BITS = 16.0


@dataclass(frozen=True)
class Rung:
    """One quant of the quality ladder (catalog QuantFormat, least compressed first)."""

    name: str
    bits_per_weight: float
    quality_rank: int


def quant_ladder() -> list[Rung]:
    """GGUF formats the estimator can size, least compressed first; of formats with the
    same quality rank (F16 and BF16) only the first is kept, as they fit identically. Kept
    in this process under the catalog version (remembered_here): every new setup's
    recommendations and the explore pages climb it (a copy: the caller may change it)."""
    return list(remembered_here("quant-ladder", (), _quant_ladder))


def _quant_ladder() -> tuple[Rung, ...]:
    rungs: list[Rung] = []
    formats = QuantFormat.objects.filter(family=WeightsFamily.GGUF).order_by(
        "-quality_rank", "name"
    )
    for fmt in formats.only("name", "bits_per_weight", "quality_rank"):
        if fmt.bits_per_weight > MAX_LADDER_BITS or not estimator_knows("gguf", fmt.name):
            continue
        if rungs and rungs[-1].quality_rank == fmt.quality_rank:
            continue
        rungs.append(Rung(fmt.name, fmt.bits_per_weight, fmt.quality_rank))
    return tuple(rungs)


def default_floor(ladder: Sequence[Rung]) -> str:
    """The most compressed rung of the estimator's default quality tier or better
    (estimator.quality.DEFAULT_MIN_TIER, "good": IQ4_XS or Q4_0 on the catalog's ladder);
    the last rung when none is, "" for no ladder."""
    floor = quality.lowest_at_least(r.name for r in ladder)
    return floor or (ladder[-1].name if ladder else "")


def ladder_down_to(ladder: Sequence[Rung], floor: str) -> list[str]:
    """Quant names from the least compressed down to `floor` (inclusive)."""
    names = [r.name for r in ladder]
    return names[: names.index(floor) + 1] if floor in names else names


def _sizeable_cards(organizations: Sequence[Owner] = ()) -> QuerySet[Accelerator]:
    """Cards the estimator can size (memory and bandwidth known), with the fields tables
    read: the public ones and the given organisations' own."""
    cards = (
        Accelerator.objects.visible_to(organizations)
        if organizations
        else Accelerator.objects.all()
    )
    return cards.filter(memory_gb__gt=0, bandwidth_gbps__gt=0).only(*CARD_FIELDS)


def _config_models(organizations: Sequence[Owner] = ()) -> QuerySet[LLMModel]:
    """Models with a config.json, with their measured file sizes prefetched (the sweep reads
    them: sizing.measured_weights): the public ones and the given organisations' own."""
    models = LLMModel.objects.visible_to(organizations) if organizations else LLMModel.objects.all()
    return models.exclude(config={}).only(*MODEL_FIELDS).prefetch_related("weights")


def sweep_accelerators(organizations: Sequence[Owner] = ()) -> list[Accelerator]:
    """Every card the estimator can size, in one query: the public ones and the given
    organisations' own (a page keys what it caches of them by those organisations)."""
    return list(_sizeable_cards(organizations).order_by("id"))


def organization_keys(organizations: Sequence[Owner]) -> tuple[object, ...]:
    """The part of a cache key that names whose own rows an entry holds: the keys of those
    organisations that own a model or a card, () for the public catalog alone. Only a
    viewer of exactly those organisations computes the same part, so an organisation's
    rows never reach anyone else's page; a member of organisations that own no row sees
    the public catalog and shares its entries (the warm-up fills them). Who owns rows is
    kept in this process under the catalog version: adding an own row is a catalog edit."""
    if not organizations:
        return ()
    owners = remembered_here("catalog-owners", (), catalog_selectors.organizations_with_own_rows)
    return tuple(sorted(o.pk for o in organizations if o.pk in owners))


def card_vendors(
    read: Callable[[], list[Accelerator]] = sweep_accelerators,
    organizations: Sequence[Owner] = (),
) -> list[str]:
    """The vendors of the sweep's cards (the explore filter's choices), cached per catalog
    version and viewer organisations (`read` must read their cards too): a warm page does
    not read every card. `read` lets a page that reads the cards anyway on a miss read
    them once."""
    return remembered(
        "card-vendors",
        organization_keys(organizations),
        lambda: sorted({card.vendor for card in read()}),
    )


def explore_model(*, slug: str, organizations: Sequence[Owner] = ()) -> LLMModel:
    """A model with a config.json, public or one of the organisations' own; raises
    LLMModel.DoesNotExist."""
    return _config_models(organizations).get(slug=slug)


def explore_models(organizations: Sequence[Owner] = ()) -> list[LLMModel]:
    """Every model with a config.json, by family and name: the public ones and the given
    organisations' own. The public models (with their weights) are kept in this process
    under the catalog version: read for each request they cost two queries and left some
    7,000 objects in reference cycles (the prefetched weights point back at their model)
    that only a full collection frees, about 3 MB a card page, so a gunicorn worker grew
    by tens of MB between collections. The organisations' own models are read each time
    (two queries, a handful of rows), and the order is the database's (one query of keys).
    The models are shared: they must not be changed."""
    public = remembered_here("explore-models", (), _public_config_models)
    if not organization_keys(organizations):
        return list(public.values())
    own = {m.pk: m for m in _config_models(organizations).filter(organization__isnull=False)}
    order = LLMModel.objects.visible_to(organizations).exclude(config={})
    pks = order.order_by("family", "name").values_list("pk", flat=True)
    return [public.get(pk) or own[pk] for pk in pks if pk in public or pk in own]


def _public_config_models() -> dict[int, LLMModel]:
    """The public models with a config.json by key, in explore_models' order."""
    return {m.pk: m for m in _config_models().order_by("family", "name")}


def explore_accelerator(*, slug: str, organizations: Sequence[Owner] = ()) -> Accelerator:
    """A card the estimator can size, public or one of the organisations' own; raises
    Accelerator.DoesNotExist."""
    return _sizeable_cards(organizations).get(slug=slug)


def offers_context(model: LLMModel, context_tokens: int) -> bool:
    """Whether a card page lists the model at `context_tokens`: not when its published
    context is shorter (a sibling or stand-in config may allow more than the model does).
    The published context includes a longer one the model card states with RoPE scaling
    (specs.published_context_tokens)."""
    published = published_context_tokens(model)
    return not (published and context_tokens > published)
