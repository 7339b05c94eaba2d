"""The long-prompt case of the capacity planner (estimator/capacity.py, docs/capacity.md
"The long case"): the worked example with 10 % of requests at a 6,000-token prompt."""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.api import RequestError, parse_request
from estimator.capacity import (
    Candidate,
    Load,
    ReplicaCurve,
    ServiceLevel,
    plan,
    replica_curve,
)
from estimator.queueing import finite_source_queue
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
                parse_request(
                    _request(
                        devices[c.label],
                        c.tensor_parallel,
                        c.engine,
                        Q4_K_M if c.quant == "Q4_K_M" else FP8,
                    )
                ),
                long_prompt_tokens=6000,
            ),
        )
        for c in _example()
    )


def test_the_long_case_rules_out_llama_cpp_and_its_ttft_is_the_hand_calculation() -> None:
    typical = plan(load=EXAMPLE_LOAD, service=EXAMPLE_SLO, candidates=_long_example())
    assert typical.cheapest is not None and typical.cheapest.quant == "fp8"
    assert typical.cheapest.long_ttft_p95_s is None  # no long case: no long figures
    assert any(p.quant == "Q4_K_M" for p in typical.plans)
    result = plan(load=LONG, service=EXAMPLE_SLO, candidates=_long_example())
    best = result.cheapest
    assert best is not None
    # llama.cpp Q4_K_M on one RTX PRO 6000 prefills 6,000 tokens in 1.95 s > 1.5 s: out.
    q4 = _long_example()[-1].curve
    assert q4.long_ttft_s == pytest.approx(1.950, abs=1e-3)
    assert all(p.quant != "Q4_K_M" for p in result.plans)
    # The pick stays vLLM FP8 on one RTX PRO 6000 a replica: its long first token takes
    # 0.904 s (the 6,000-token prompt in one 8,192-token step next to the batch).
    assert (best.label, best.engine, best.tensor_parallel) == ("RTX PRO 6000 (buy)", "vllm", 1)
    curve = _long_example()[6].curve
    assert curve.long_ttft_s is not None
    assert (curve.ttft_s, curve.long_ttft_s) == (
        pytest.approx(0.22919, abs=1e-5), pytest.approx(0.90400, abs=1e-5))  # fmt: skip
    # 1. Mean no-load TTFT = 0.9 x 0.22919 + 0.1 x 0.90400 = 0.29667 s; the mean service
    #    S = 0.29667 + 400 / v(16) (30.28 tok/s) = 13.507 s; the curve carries the prefill.
    mean_ttft = 0.9 * curve.ttft_s + 0.1 * curve.long_ttft_s
    assert best.slots_per_replica == 16 and best.prefill_busy_share == 0
    service_s = mean_ttft + 400 / best.tokens_per_s_per_user
    assert best.service_time_s == pytest.approx(service_s) == pytest.approx(13.507, rel=1e-4)
    # 2. The exact queue, 200 users, 30 s think, c = 5 x 16 = 80: 1.9 % wait at most (the
    #    M/M/c bound; the exact queue gives less), so no wait at p95: TTFT p95 typical =
    #    0.2292 s, long = 0.9040 s <= 1.5 s.
    exact = finite_source_queue(users=200, servers=80, think_s=30, service_s=service_s)
    assert exact.wait_quantile_s(0.95) == 0.0
    assert best.wait_probability < 0.05
    assert best.ttft_p95_s == pytest.approx(curve.ttft_s)
    assert best.long_ttft_p95_s == pytest.approx(curve.long_ttft_s)
    # 3. 5 + 1 replicas, 6 cards: the same 2,242.75 USD a month as without long requests
    assert (best.replicas, best.cards) == (6, 6)
    assert best.monthly_usd == pytest.approx(2242.75, abs=0.01)


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
