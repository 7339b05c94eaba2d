"""Cost per million tokens, and renting vs buying hardware.

Prices in USD, energy in kWh, power in W. A month is 730 hours (8760 h / 12).
"""

from __future__ import annotations

from dataclasses import dataclass

HOURS_PER_MONTH = 8760 / 12  # 730 h
DAYS_PER_MONTH = 365 / 12


def usd_per_million_tokens(usd_per_hour: float, tokens_per_s: float) -> float:
    """usd_per_hour / (tokens/s x 3600) x 1e6.

    Pass the AGGREGATE decode tok/s (all concurrent streams) for output tokens, the prefill
    tok/s for input tokens. Assumes the machine is busy the whole paid hour.
    """
    if tokens_per_s <= 0:
        raise ValueError("tokens_per_s must be positive")
    return usd_per_hour / (tokens_per_s * 3600) * 1e6


def usd_per_tokens_per_s(purchase_usd: float | None, tokens_per_s: float | None) -> float | None:
    """Purchase price per decode tok/s (lower is better value): purchase_usd / tokens_per_s.
    None without a price or a speed."""
    if not purchase_usd or not tokens_per_s:
        return None
    return purchase_usd / tokens_per_s


# What a GPU needs around it to serve: CPU, board, memory, power supply, storage, case.
# Basis (an assumption, list prices of a current workstation platform without GPU):
# 16-core desktop CPU ~550 USD, board ~300, 128 GB DDR5 ~350, 1,200 W PSU ~200, 2 TB NVMe
# ~150, case and cooling ~200 = ~1,750, rounded up to 2,000 USD; while the GPUs decode the
# host draws ~150 W (the CPU mostly idles). A multi-GPU server costs more.
HOST_ALLOWANCE_USD = 2000
HOST_POWER_W = 150


def system_purchase_usd(
    unit_price_usd: float | None, count: int, *, host: bool = True
) -> float | None:
    """unit price x count + HOST_ALLOWANCE_USD; None without a unit price. host=False for a
    device that is a whole computer (unified memory: Apple, DGX Spark, Strix Halo): its
    price already includes the CPU, memory and case."""
    if not unit_price_usd:
        return None
    return unit_price_usd * count + (HOST_ALLOWANCE_USD if host else 0)


def system_power_w(unit_power_w: float | None, count: int, *, host: bool = True) -> float | None:
    """unit power (TDP) x count + HOST_POWER_W; None without a unit power. host=False as in
    system_purchase_usd: the device's power is the machine's."""
    if not unit_power_w:
        return None
    return unit_power_w * count + (HOST_POWER_W if host else 0)


@dataclass(frozen=True)
class Ownership:
    """Owning hardware: purchase, power and how it is used."""

    purchase_usd: float
    power_w: float  # draw while serving (all devices + host)
    electricity_usd_per_kwh: float
    pue: float = 1.0  # datacenter power usage effectiveness; 1.0 for a desk
    hours_per_day: float = 24.0
    utilization: float = 1.0  # share of those hours at power_w (the rest counted as idle, 0 W)
    amortization_months: int | None = 36  # None: leave the purchase out of the monthly cost


@dataclass(frozen=True)
class RentVsBuy:
    monthly_energy_usd: float
    monthly_amortization_usd: float
    monthly_ownership_usd: float
    monthly_rent_usd: float
    break_even_months: float | None  # None when renting is never more expensive


def monthly_energy_usd(own: Ownership) -> float:
    """power_w / 1000 x PUE x hours_per_day x utilization x 365/12 days x USD/kWh."""
    kwh = own.power_w / 1000 * own.pue * own.hours_per_day * own.utilization * DAYS_PER_MONTH
    return kwh * own.electricity_usd_per_kwh


def monthly_rent_usd(usd_per_hour: float, hours_per_day: float) -> float:
    """Renting the same hours: usd_per_hour x hours_per_day x 365/12 days."""
    return usd_per_hour * hours_per_day * DAYS_PER_MONTH


def rent_vs_buy(own: Ownership, rent_usd_per_hour: float) -> RentVsBuy:
    """Monthly cost of owning (energy + purchase / amortization_months) vs renting the same
    hours, and the months after which buying has cost less in total:
    purchase / (monthly rent - monthly energy); None if rent <= energy.

    Excludes staff, hosting space, networking, resale value and financing.
    """
    energy = monthly_energy_usd(own)
    amortization = own.purchase_usd / own.amortization_months if own.amortization_months else 0.0
    rent = monthly_rent_usd(rent_usd_per_hour, own.hours_per_day)
    saving = rent - energy
    return RentVsBuy(
        monthly_energy_usd=energy,
        monthly_amortization_usd=amortization,
        monthly_ownership_usd=energy + amortization,
        monthly_rent_usd=rent,
        break_even_months=own.purchase_usd / saving if saving > 0 else None,
    )


def ownership_usd_per_hour(own: Ownership) -> float:
    """What one busy hour of owned hardware costs: the monthly cost of owning (energy +
    purchase / amortization_months, rent_vs_buy) over the busy hours of a month,
    hours_per_day x utilization x 365/12 days. With amortization_months None the purchase
    is left out (a sunk cost) and only the energy remains.

    Feed it to usd_per_million_tokens for the owner's cost per million tokens: the idle
    hours are paid for too, so a lower utilization raises the cost of each token."""
    busy_hours = own.hours_per_day * own.utilization * DAYS_PER_MONTH
    if busy_hours <= 0:
        raise ValueError("hours_per_day x utilization must be positive")
    amortization = own.purchase_usd / own.amortization_months if own.amortization_months else 0.0
    return (amortization + monthly_energy_usd(own)) / busy_hours
