"""What a sized configuration costs to run (estimator.cost): cloud offers per 1M output
tokens, owning the hardware against renting an offer, purchase price per decode tok/s."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from catalog.sizing import CardFit
from estimator import cost
from pricing.models import CloudOffer


@dataclass(frozen=True)
class OfferCost:
    """One cloud offer's hourly price and its price per 1M output tokens at the decode
    speed of one sequence and of every configured sequence together (None: no speed)."""

    offer: CloudOffer
    per_hour: float
    per_million_one: float | None
    per_million_all: float | None


def _per_million(usd_per_hour: float, tokens_per_s: float | None) -> float | None:
    if not tokens_per_s or tokens_per_s <= 0:
        return None
    return cost.usd_per_million_tokens(usd_per_hour, tokens_per_s)


def offer_costs(
    offers: Iterable[CloudOffer],
    *,
    one_sequence_tokens_per_s: float | None,
    all_sequences_tokens_per_s: float | None,
) -> list[OfferCost]:
    """Each offer's hourly price per 1M output tokens (estimator.cost.usd_per_million_tokens)
    at the decode speed of one sequence and at the aggregate speed over the configured
    concurrency, cheapest at that concurrency first. Prices stay in the offer's currency
    (the formula is currency-neutral); offers must have an on-demand price."""
    rows = []
    for offer in offers:
        per_hour = float(offer.on_demand_per_hour or 0)
        rows.append(
            OfferCost(
                offer=offer,
                per_hour=per_hour,
                per_million_one=_per_million(per_hour, one_sequence_tokens_per_s),
                per_million_all=_per_million(per_hour, all_sequences_tokens_per_s),
            )
        )
    return sorted(rows, key=lambda r: (r.per_million_all is None, r.per_million_all or 0))


def rent_vs_buy(ownership: cost.Ownership, offer: OfferCost) -> cost.RentVsBuy:
    """estimator.cost.rent_vs_buy against renting `offer` for the same hours: monthly
    energy, amortisation (36 months) and rent, and the months after which buying has cost
    less (None: never)."""
    return cost.rent_vs_buy(ownership, offer.per_hour)


def usd_per_token_per_s(price_usd: float | None, fit: CardFit) -> float | None:
    """Purchase price per decode tok/s of one sequence (estimator.cost); None without a
    price, a fit or a calibrated speed."""
    return cost.usd_per_tokens_per_s(price_usd, fit.calibrated_speed)


# Owning without a user's own figures (the answer panel and the explore rows): the purchase
# spread over three years, the machine busy half of every day, electricity at the
# configurator's default price. Assumptions, shown on the pages beside the figure.
DEFAULT_AMORTIZATION_YEARS = 3
DEFAULT_UTILIZATION = 0.5
DEFAULT_USD_PER_KWH = 0.15  # the configurator's rent-or-buy default (configurator/forms.py)


def owned_ownership(
    unit_price_usd: float | None,
    unit_power_w: float | None,
    count: int,
    *,
    years: float = DEFAULT_AMORTIZATION_YEARS,
    utilization: float = DEFAULT_UTILIZATION,
    usd_per_kwh: float = DEFAULT_USD_PER_KWH,
) -> cost.Ownership | None:
    """Owning `count` cards plus the host (estimator.cost.system_purchase_usd and
    system_power_w), run 24 h a day at `utilization`, the purchase amortised over `years`;
    None without a unit price. Without a unit power only the host's power is counted."""
    purchase = cost.system_purchase_usd(unit_price_usd, count)
    if purchase is None:
        return None
    power = cost.system_power_w(unit_power_w, count) or float(cost.HOST_POWER_W)
    return cost.Ownership(
        purchase_usd=purchase,
        power_w=power,
        electricity_usd_per_kwh=usd_per_kwh,
        hours_per_day=24.0,
        utilization=utilization,
        amortization_months=max(1, round(years * 12)),
    )


def owned_usd_per_million(
    ownership: cost.Ownership | None, tokens_per_s: float | None
) -> float | None:
    """Owner's cost per 1M output tokens at `tokens_per_s` (aggregate decode):
    estimator.cost.ownership_usd_per_hour / (tokens/s x 3600) x 1e6; None without an
    ownership (no price) or a speed."""
    if ownership is None or not tokens_per_s or tokens_per_s <= 0:
        return None
    return cost.usd_per_million_tokens(cost.ownership_usd_per_hour(ownership), tokens_per_s)
