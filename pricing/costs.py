"""What a sized configuration costs to run (estimator.cost): cloud offers per 1M output
tokens and per month, owning the hardware (per month, per 1M tokens) against renting an
offer, purchase price per decode tok/s, and whether a catalog price is a base
configuration's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from catalog.hardware import base_configuration_price  # noqa: F401 (re-exported: costs.base_configuration_price)
from catalog.sizing import CardFit
from estimator import cost
from pricing.models import CloudOffer


@dataclass(frozen=True)
class OfferCost:
    """One cloud offer's hourly price for the setup's GPUs, its price per 1M output tokens
    at the decode speed of one sequence and of every configured sequence together (None:
    no speed), and what renting it costs a month for `hours_per_day` (None: not asked).

    per_hour is the offer's per-GPU-hour price x the setup's GPUs (`gpus`): a 2-GPU setup
    on an 8-GPU node pays 2/8 of the node's hour (the other GPUs run other replicas or are
    rented out); instance_per_hour is the whole instance's hour, offer_gpus its GPUs."""

    offer: CloudOffer
    per_hour: float
    per_million_one: float | None
    per_million_all: float | None
    monthly: float | None = None
    gpus: int = 0  # GPUs the setup uses (0: the whole instance)
    offer_gpus: int = 1
    instance_per_hour: float = 0.0

    @property
    def split(self) -> bool:
        """Whether the setup uses only part of the instance (its price is split per GPU)."""
        return 0 < self.gpus < self.offer_gpus


def _per_million(usd_per_hour: float, tokens_per_s: float | None) -> float | None:
    if not tokens_per_s or tokens_per_s <= 0:
        return None
    return cost.usd_per_million_tokens(usd_per_hour, tokens_per_s)


def setup_share_per_hour(offer: CloudOffer, gpus: int | None) -> float:
    """The setup's share of an offer's hour: on-demand per hour / the offer's GPUs x the
    setup's GPUs (at most the offer's); the whole instance when `gpus` is None."""
    instance = float(offer.on_demand_per_hour or 0)
    if not gpus:
        return instance
    return instance / offer.gpu_count * min(gpus, offer.gpu_count)


def offer_costs(
    offers: Iterable[CloudOffer],
    *,
    one_sequence_tokens_per_s: float | None,
    all_sequences_tokens_per_s: float | None,
    hours_per_day: float | None = None,
    gpus: int | None = None,
) -> list[OfferCost]:
    """Each offer's price for the setup's `gpus` (setup_share_per_hour: per GPU-hour x
    GPUs; the whole instance when None) per 1M output tokens
    (estimator.cost.usd_per_million_tokens) at the decode speed of one sequence and at the
    aggregate speed over the configured concurrency, cheapest at that concurrency first,
    and with `hours_per_day` its monthly rent (estimator.cost.monthly_rent_usd: per hour x
    hours a day x 365/12 days). Prices stay in the offer's currency (the formulas are
    currency-neutral); offers must have an on-demand price."""
    rows = []
    for offer in offers:
        per_hour = setup_share_per_hour(offer, gpus)
        rows.append(
            OfferCost(
                offer=offer,
                per_hour=per_hour,
                per_million_one=_per_million(per_hour, one_sequence_tokens_per_s),
                per_million_all=_per_million(per_hour, all_sequences_tokens_per_s),
                monthly=(
                    None
                    if hours_per_day is None
                    else cost.monthly_rent_usd(per_hour, hours_per_day)
                ),
                gpus=gpus or 0,
                offer_gpus=offer.gpu_count,
                instance_per_hour=float(offer.on_demand_per_hour or 0),
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
DEFAULT_USD_PER_KWH = 0.15  # the configurator's rent-or-buy default (configurator/rent_forms.py)


def owned_ownership(
    unit_price_usd: float | None,
    unit_power_w: float | None,
    count: int,
    *,
    years: float = DEFAULT_AMORTIZATION_YEARS,
    utilization: float = DEFAULT_UTILIZATION,
    usd_per_kwh: float = DEFAULT_USD_PER_KWH,
    complete_system: bool = False,
) -> cost.Ownership | None:
    """Owning `count` cards plus the host (estimator.cost.system_purchase_usd and
    system_power_w), run 24 h a day at `utilization`, the purchase amortised over `years`;
    None without a unit price. Without a unit power only the host's power is counted.
    complete_system (a unified-memory machine: Apple, DGX Spark, Strix Halo): no host
    allowance, and without a listed power the host's 150 W stands in for the machine's."""
    host = not complete_system
    purchase = cost.system_purchase_usd(unit_price_usd, count, host=host)
    if purchase is None:
        return None
    power = cost.system_power_w(unit_power_w, count, host=host) or float(cost.HOST_POWER_W)
    return owned_system(
        purchase, power, years=years, utilization=utilization, usd_per_kwh=usd_per_kwh
    )


def owned_system(
    purchase_usd: float,
    power_w: float,
    *,
    years: float = DEFAULT_AMORTIZATION_YEARS,
    utilization: float = DEFAULT_UTILIZATION,
    usd_per_kwh: float = DEFAULT_USD_PER_KWH,
    pue: float = 1.0,
) -> cost.Ownership:
    """Owning a whole system (cards and host) of `purchase_usd` drawing `power_w` while
    busy: run 24 h a day at `utilization`, the purchase amortised over `years` (at least
    one month). owned_ownership's figures when the visitor types the system's own."""
    return cost.Ownership(
        purchase_usd=purchase_usd,
        power_w=power_w,
        electricity_usd_per_kwh=usd_per_kwh,
        pue=pue,
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


@dataclass(frozen=True)
class OwnerMonth:
    """What owning costs a month (estimator.cost.rent_vs_buy's owner side, with no offer
    to rent): electricity, the purchase spread over the amortisation months, and both."""

    energy_usd: float
    amortization_usd: float
    total_usd: float


def owner_month(ownership: cost.Ownership) -> OwnerMonth:
    """energy = estimator.cost.monthly_energy_usd; amortisation = purchase /
    amortization_months (0 when the purchase is left out)."""
    energy = cost.monthly_energy_usd(ownership)
    months = ownership.amortization_months
    amortization = ownership.purchase_usd / months if months else 0.0
    return OwnerMonth(energy, amortization, energy + amortization)
