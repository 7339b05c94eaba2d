"""pricing.costs.owned_ownership / owned_usd_per_million: the owner's cost per 1M tokens
that the answer panel and the explore rows show for a card with a price."""

import pytest

from pricing import costs


def test_one_card_owned_worked_example() -> None:
    # One 2,000 USD card of 450 W: purchase 2,000 + 2,000 host = 4,000 USD over 36 months
    # = 111.11 USD/month. Power 450 + 150 host = 600 W, 24 h x 0.5 x 365/12 d = 365 busy
    # hours = 219 kWh x 0.15 = 32.85 USD/month. (111.11 + 32.85) / 365 h = 0.39441 USD/h.
    # At 50 tok/s aggregate: 0.39441 / (50 x 3600) x 1e6 = 2.1912 USD per 1M tokens.
    own = costs.owned_ownership(2000, 450, 1)
    assert own is not None
    assert own.purchase_usd == 4000
    assert own.power_w == 600
    assert costs.owned_usd_per_million(own, 50) == pytest.approx(2.1912, rel=1e-4)


def test_more_utilization_makes_each_token_cheaper() -> None:
    busy = costs.owned_ownership(2000, 450, 1, utilization=1.0)
    idle = costs.owned_ownership(2000, 450, 1, utilization=0.25)
    assert costs.owned_usd_per_million(busy, 50) < costs.owned_usd_per_million(idle, 50)  # type: ignore[operator]


def test_no_price_or_no_speed_has_no_owned_cost() -> None:
    assert costs.owned_ownership(None, 450, 1) is None
    own = costs.owned_ownership(2000, None, 2)
    assert own is not None and own.power_w == 150  # host only: the card's power is unknown
    assert costs.owned_usd_per_million(own, None) is None
    assert costs.owned_usd_per_million(None, 50) is None


def test_a_unified_memory_machine_has_no_host_allowance() -> None:
    # A 3,999 USD Mac Studio of 270 W is the whole computer: purchase 3,999 (not 5,999),
    # power 270 W (not 420). Over 36 months 111.08 USD + 270 W x 365 busy h = 98.55 kWh
    # x 0.15 = 14.78 USD a month; / 365 h = 0.34484 USD/h; at 20 tok/s
    # 0.34484 / 72,000 x 1e6 = 4.7894 USD per 1M tokens.
    own = costs.owned_ownership(3999, 270, 1, complete_system=True)
    assert own is not None
    assert (own.purchase_usd, own.power_w) == (3999, 270)
    assert costs.owned_usd_per_million(own, 20) == pytest.approx(4.7894, rel=1e-4)
    # Without a listed power the host's 150 W stands in for the machine's.
    bare = costs.owned_ownership(3999, None, 1, complete_system=True)
    assert bare is not None and bare.power_w == 150
