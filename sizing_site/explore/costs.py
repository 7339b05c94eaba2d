"""What an explore row costs: USD per 1M output tokens at the row's decode speed (one
sequence), from the card's cheapest public cloud offer, else from owning the card at
pricing.costs' defaults (`RowCost`), and the reads those figures need (the offers, the
cards' power), each one query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from catalog import hardware
from catalog.models import Accelerator
from catalog.scoping import Owner
from catalog.sizing import CardFit
from estimator import cost
from pricing.costs import owned_ownership, owned_usd_per_million
from pricing.models import CloudOffer


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
    their cached tables on it). Organisation offers stay out: the explore tables are
    shared by everyone."""
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
    model table's cache key and the model sweep's ETag carry it."""
    return tuple(sorted((k, o.usd_per_hour, o.provider, o.gpu_count) for k, o in offers.items()))


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
    """The cheapest cloud offer's cost per 1M tokens (usd_per_hour / (tok/s x 3,600) x
    1e6), else the owner's; None without a speed, or with neither an offer nor a price."""
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
