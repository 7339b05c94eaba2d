"""A candidate's own electricity price (capacity.Candidate.electricity_usd_per_kwh)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from estimator.capacity import plan
from tests.estimator.test_capacity import EXAMPLE_LOAD, EXAMPLE_SLO, _example


def test_the_worked_example_is_unchanged_and_its_own_price_reaches_the_cost() -> None:
    best = plan(load=EXAMPLE_LOAD, service=EXAMPLE_SLO, candidates=_example()).cheapest
    assert best is not None
    # Unchanged: 6 RTX PRO 6000 (vLLM FP8), (10,500 / 36 + 547.5 kWh x 0.15) x 6 =
    # 2,242.75 USD a month, break-even 10,500 / (1,306.70 - 82.13) = 8.57 months.
    assert best.monthly_owned_usd == pytest.approx(2242.75, abs=0.01)
    assert best.break_even_months == pytest.approx(8.574, rel=1e-3)
    # At the card's own 0.30 USD/kWh: energy 547.5 kWh x 0.30 = 164.25 USD a replica;
    # llama.cpp Q4_K_M needs 7 cards: (291.67 + 164.25) x 7 = 3,191.42; break-even
    # 10,500 / (1,306.70 - 164.25) = 9.19.
    dearer = [
        replace(c, electricity_usd_per_kwh=0.30) if c.label == "RTX PRO 6000 (buy)" else c
        for c in _example()
    ]
    found = [
        p
        for p in plan(load=EXAMPLE_LOAD, service=EXAMPLE_SLO, candidates=dearer).plans
        if (p.label, p.quant) == ("RTX PRO 6000 (buy)", "Q4_K_M")
    ]
    assert found[0].monthly_owned_usd == pytest.approx(3191.42, abs=0.01)
    assert found[0].break_even_months == pytest.approx(10500 / (1306.70 - 164.25), rel=1e-4)
