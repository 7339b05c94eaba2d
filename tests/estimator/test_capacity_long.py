"""The long-prompt case of the capacity planner (estimator/capacity.py, docs/capacity.md
"The long case"): the worked example with 10 % of requests at a 6,000-token prompt."""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.api import RequestError
from estimator.capacity import (
    Candidate,
    Load,
    ReplicaCurve,
    ServiceLevel,
    erlang_c,
    plan,
    replica_curve,
)
from tests.estimator.test_capacity import (
    EXAMPLE_LOAD,
    EXAMPLE_SLO,
    FP8,
    H100,
    L40S,
    PRO_6000,
    Q4_K_M,
    _example,
    _request,
)

LONG = replace(EXAMPLE_LOAD, long_prompt_tokens=6000, long_share=0.1)


@functools.cache
def _long_example() -> tuple[Candidate, ...]:
    """The worked example's candidates with curves that also know the 6,000-token prompt."""
    devices = {"4x L40S (ours)": L40S, "H100 cloud": H100, "RTX PRO 6000 (buy)": PRO_6000}
    return tuple(
        replace(
            c,
            curve=replica_curve(
                _request(
                    devices[c.label],
                    c.tensor_parallel,
                    c.engine,
                    Q4_K_M if c.quant == "Q4_K_M" else FP8,
                ),
                long_prompt_tokens=6000,
            ),
        )
        for c in _example()
    )


def test_the_long_case_changes_the_pick_and_its_ttft_is_the_hand_calculation() -> None:
    typical = plan(load=EXAMPLE_LOAD, service=EXAMPLE_SLO, candidates=_long_example())
    assert typical.cheapest is not None and typical.cheapest.quant == "Q4_K_M"
    assert typical.cheapest.long_ttft_p95_s is None  # no long case: no long figures
    result = plan(load=LONG, service=EXAMPLE_SLO, candidates=_long_example())
    best = result.cheapest
    assert best is not None
    # llama.cpp Q4_K_M on one RTX PRO 6000 prefills 6,000 tokens in 2.69 s > 1.5 s: out.
    q4 = _long_example()[-1].curve
    assert q4.long_ttft_s == pytest.approx(2.686, abs=1e-3)
    assert all(p.quant != "Q4_K_M" for p in result.plans)
    # The pick is now vLLM FP8 over 2 RTX PRO 6000: 15 + 1 replicas, 32 cards, 10,809.64 USD
    assert (best.label, best.engine, best.tensor_parallel) == ("RTX PRO 6000 (buy)", "vllm", 2)
    assert (best.replicas, best.cards, best.slots_per_replica) == (16, 32, 5)
    assert best.monthly_usd == pytest.approx(10809.64, abs=0.01)
    assert (best.monthly_usd or 0) > (typical.cheapest.monthly_usd or 0)  # 10,810 > 2,990
    curve = _long_example()[7].curve  # RTX PRO 6000 vLLM FP8 TP2
    assert curve.long_ttft_s is not None
    # Curve: typical TTFT 0.16958 s at 14,161 tok/s prefill; long 0.54091 s at 13,587 tok/s.
    assert (curve.ttft_s, curve.long_ttft_s) == (
        pytest.approx(0.16958, abs=1e-5), pytest.approx(0.54091, abs=1e-5))  # fmt: skip
    # 1. Mean no-load TTFT = 0.9 x 0.16958 + 0.1 x 0.54091 = 0.20671 s;
    #    lambda = 200 / (0.20671 + 400 / 30 + 30) = 200 / 43.5401 = 4.5935 requests/s.
    mean_ttft = 0.9 * curve.ttft_s + 0.1 * curve.long_ttft_s
    rate = 200 / (mean_ttft + 400 / 30 + 30)
    assert best.arrival_rate_per_s == pytest.approx(rate) == pytest.approx(4.5935, rel=1e-4)
    # 2. Prefill: 4.5935 x (0.9 x 1,000 / 14,161 + 0.1 x 6,000 / 13,587) = 4.5935 x 0.10771
    #    = 0.4948 replica-seconds a second, over 15 serving replicas p = 0.03299.
    assert curve.long_prefill_tokens_per_s is not None
    share = rate * (0.9 * 1000 / curve.prefill_tokens_per_s
                    + 0.1 * 6000 / curve.long_prefill_tokens_per_s) / 15  # fmt: skip
    assert best.prefill_busy_share == pytest.approx(share) == pytest.approx(0.03299, rel=1e-3)
    # 3. 5 slots at 30.49 tok/s; S = 0.20671 + 400 / 30.49 = 13.325 s; a = 4.5935 x 13.325
    #    = 61.21, rounded up to 61.25; c = 15 x 5 = 75; C(75, 61.25) = 0.0589 > 0.05.
    service_s = mean_ttft + 400 / best.tokens_per_s_per_user
    assert best.service_time_s == pytest.approx(service_s) == pytest.approx(13.325, rel=1e-4)
    assert best.utilisation == pytest.approx(61.25 / 75)
    wait = erlang_c(75, 61.25)
    assert best.wait_probability == pytest.approx(wait) == pytest.approx(0.0589, abs=1e-4)
    # 4. Wait p95 = 13.325 x ln(0.0589 / 0.05) / (75 - 61.25) = 0.1583 s, the same for
    #    every request (first come, first served). Typical TTFT p95 = 0.1696 + 0.1583
    #    = 0.3278 s; long TTFT p95 = 0.5409 + 0.1583 = 0.6992 s <= 1.5 s; p50: no wait.
    wait_p95 = service_s * math.log(wait / 0.05) / (75 - 61.25)
    assert wait_p95 == pytest.approx(0.1583, abs=1e-4)
    assert best.ttft_p95_s == pytest.approx(curve.ttft_s + wait_p95)
    assert best.long_ttft_p95_s == pytest.approx(curve.long_ttft_s + wait_p95)
    assert best.long_ttft_p95_s == pytest.approx(0.6992, abs=1e-4)
    assert best.long_ttft_p50_s == pytest.approx(curve.long_ttft_s)


def test_a_long_share_of_zero_is_the_typical_plan() -> None:
    zero = replace(LONG, long_share=0.0)
    a = plan(load=EXAMPLE_LOAD, service=EXAMPLE_SLO, candidates=_example())
    b = plan(load=zero, service=EXAMPLE_SLO, candidates=_example())
    assert a == b


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"long_share": 1.5}, "load.long_share"),
        ({"long_share": -0.1}, "load.long_share"),
        ({"long_share": 0.1, "long_prompt_tokens": None}, "load.long_prompt_tokens"),
        ({"long_prompt_tokens": 0}, "load.long_prompt_tokens"),
        ({"long_output_tokens": 0}, "load.long_output_tokens"),
    ],
)
def test_it_names_the_field_of_a_bad_long_case(changes: dict, field: str) -> None:
    with pytest.raises(RequestError) as caught:
        plan(load=replace(LONG, **changes), service=EXAMPLE_SLO, candidates=_example())
    assert caught.value.field == field


def _curve(speed: float, slope: float, limit: int, prefill: float) -> ReplicaCurve:
    ns = sorted({1, 2, 4, 8, 16, 32, limit} & set(range(1, limit + 1)))
    return ReplicaCurve(
        points=tuple((n, 1 / (1 / speed + slope * (n - 1))) for n in ns),
        max_sequences=limit,
        prefill_tokens_per_s=prefill,
        ttft_s=1000 / prefill + 1 / speed,
    )


@settings(max_examples=40, deadline=None)
@given(
    per_minute=st.floats(1, 3000),
    share=st.floats(0.01, 1),
    long_prompt=st.integers(1000, 16000),
    long_output=st.integers(400, 2000),
    seed=st.integers(0, 10_000),
)
def test_long_requests_never_lower_the_cost_of_the_cheapest_plan(
    per_minute: float, share: float, long_prompt: int, long_output: int, seed: int
) -> None:
    """At a given request rate (open loop). In a closed loop longer requests also lower
    the rate (a user waits for the answer before the next), so there they can cost less:
    Hypothesis found 20 replicas typical against 19 with the long case, prefill-bound."""
    import random

    rng = random.Random(seed)
    candidates = [
        Candidate(
            label=f"c{i}",
            curve=_curve(
                rng.uniform(40, 120),
                rng.uniform(1e-4, 3e-3),
                rng.randint(1, 64),
                rng.uniform(1000, 40000),
            ),
            rent_usd_per_card_hour=rng.uniform(0.5, 4),
        )
        for i in range(6)
    ]
    service = ServiceLevel(ttft_p95_s=5, tokens_per_s_per_user=30)
    base = Load(requests_per_minute=per_minute, prompt_tokens=1000, output_tokens=400)
    longer = replace(base, long_prompt_tokens=long_prompt, long_output_tokens=long_output,
                     long_share=share)  # fmt: skip
    typical = plan(load=base, service=service, candidates=candidates).cheapest
    mixed = plan(load=longer, service=service, candidates=candidates).cheapest
    if typical is None:
        assert mixed is None
    elif mixed is not None:
        assert mixed.monthly_usd is not None and typical.monthly_usd is not None
        assert mixed.monthly_usd >= typical.monthly_usd
