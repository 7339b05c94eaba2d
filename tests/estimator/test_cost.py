import pytest
from hypothesis import given
from hypothesis import strategies as st

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
