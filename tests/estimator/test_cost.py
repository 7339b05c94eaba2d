import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator import cost
from estimator.cost import (
    Ownership,
    rent_vs_buy,
    system_power_w,
    system_purchase_usd,
    usd_per_million_tokens,
    usd_per_tokens_per_s,
)


def test_it_prices_a_million_output_tokens():
    # $2.69/h at 1000 tok/s: 2.69 / (1000 x 3600) x 1e6 = 0.7472 $
    assert usd_per_million_tokens(2.69, 1000) == pytest.approx(0.74722, rel=1e-4)


def test_it_refuses_zero_throughput():
    with pytest.raises(ValueError):
        usd_per_million_tokens(1.0, 0)


def test_it_breaks_even_when_rent_exceeds_energy():
    own = Ownership(
        purchase_usd=30000,
        power_w=1000,
        electricity_usd_per_kwh=0.15,
        pue=1.5,
        amortization_months=36,
    )
    result = rent_vs_buy(own, rent_usd_per_hour=2.69)
    # energy: 1 kW x 1.5 x 24 h x 30.4167 d = 1095 kWh x 0.15 = 164.25 $/month
    assert result.monthly_energy_usd == pytest.approx(164.25, rel=1e-4)
    # rent: 2.69 x 24 x 30.4167 = 1963.70 $/month
    assert result.monthly_rent_usd == pytest.approx(1963.70, rel=1e-4)
    assert result.monthly_amortization_usd == pytest.approx(30000 / 36)
    # 30000 / (1963.70 - 164.25) = 16.67 months
    assert result.break_even_months == pytest.approx(16.672, rel=1e-3)


def test_it_says_never_when_renting_is_cheaper_than_power():
    own = Ownership(purchase_usd=1000, power_w=5000, electricity_usd_per_kwh=0.5)
    assert rent_vs_buy(own, rent_usd_per_hour=0.10).break_even_months is None


def test_it_counts_only_the_hours_used():
    own = Ownership(
        purchase_usd=0,
        power_w=1000,
        electricity_usd_per_kwh=0.2,
        hours_per_day=8,
        utilization=0.5,
        amortization_months=None,
    )
    # 1 kW x 8 h x 0.5 x 30.4167 d x 0.2 $ = 24.33 $
    result = rent_vs_buy(own, 1.0)
    assert result.monthly_energy_usd == pytest.approx(24.333, rel=1e-3)
    assert result.monthly_ownership_usd == result.monthly_energy_usd


@given(st.floats(0.1, 100), st.floats(1, 1e5), st.floats(1.01, 10))
def test_it_costs_less_per_token_when_faster(price, tps, factor):
    assert usd_per_million_tokens(price, tps * factor) < usd_per_million_tokens(price, tps)


def test_the_owned_system_adds_the_host_to_the_gpus() -> None:
    # 2 x 10,000 USD + 2,000 USD host = 22,000 USD; 2 x 350 W + 150 W host = 850 W
    assert system_purchase_usd(10_000, 2) == 22_000
    assert system_power_w(350, 2) == 850
    assert system_purchase_usd(None, 2) is None and system_power_w(None, 2) is None


def test_purchase_price_per_token_per_second() -> None:
    # 1,600 USD / 128 tok/s = 12.5 USD per tok/s
    assert usd_per_tokens_per_s(1600, 128) == 12.5
    assert usd_per_tokens_per_s(None, 128) is None and usd_per_tokens_per_s(1600, None) is None


def test_ownership_usd_per_hour_worked_example() -> None:
    # 12,000 USD over 36 months = 333.33 USD/month; 1,000 W x 24 h x 0.5 x 365/12 d
    # = 365 kWh x 0.20 = 73.00 USD/month; busy hours 24 x 0.5 x 365/12 = 365 h.
    # (333.33 + 73.00) / 365 = 1.1133 USD per busy hour.
    own = cost.Ownership(
        purchase_usd=12_000,
        power_w=1_000,
        electricity_usd_per_kwh=0.20,
        hours_per_day=24,
        utilization=0.5,
        amortization_months=36,
    )
    assert cost.ownership_usd_per_hour(own) == pytest.approx(1.11324, rel=1e-4)
    # At 100 tok/s that hour makes 360,000 tokens: 1.11324 / 0.36 = 3.0923 USD per 1M.
    per_million = cost.usd_per_million_tokens(cost.ownership_usd_per_hour(own), 100)
    assert per_million == pytest.approx(3.0923, rel=1e-4)


def test_ownership_without_amortization_is_energy_only() -> None:
    # 500 W at 0.30 USD/kWh = 0.15 USD per busy hour, whatever the utilization.
    own = cost.Ownership(
        purchase_usd=5_000,
        power_w=500,
        electricity_usd_per_kwh=0.30,
        utilization=0.25,
        amortization_months=None,
    )
    assert cost.ownership_usd_per_hour(own) == pytest.approx(0.15)


def test_ownership_refuses_zero_busy_hours() -> None:
    own = cost.Ownership(purchase_usd=1, power_w=1, electricity_usd_per_kwh=0.1, utilization=0)
    with pytest.raises(ValueError):
        cost.ownership_usd_per_hour(own)
