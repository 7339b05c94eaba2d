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
