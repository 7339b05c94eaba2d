"""The pruned capacity planner (estimator/capacity.py `plan`, docs/capacity.md "Performance")
returns exactly what sizing every candidate returns (`plan(..., prune=False)`)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.capacity import (
    Candidate,
    Horizon,
    Load,
    ReplicaCurve,
    ServiceLevel,
    plan,
)


@st.composite
def curves(draw: st.DrawFn) -> ReplicaCurve:
    """A replica whose step time grows linearly with the sequences, sometimes not fitting
    at all, sometimes with a long-prompt figure."""
    if draw(st.integers(0, 9)) == 0:
        return ReplicaCurve(points=(), max_sequences=0, prefill_tokens_per_s=1, ttft_s=1)
    base_s = draw(st.floats(0.005, 0.05))
    per_sequence_s = draw(st.floats(0.0, 0.003))
    limit = draw(st.integers(1, 600))
    ladder = sorted({n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) if n <= limit} | {limit})
    prefill = draw(st.floats(500, 50_000))
    ttft = draw(st.floats(0.02, 1.0))
    long = draw(st.booleans())
    return ReplicaCurve(
        points=tuple((n, 1 / (base_s + per_sequence_s * n)) for n in ladder),
        max_sequences=limit,
        prefill_tokens_per_s=prefill,
        ttft_s=ttft,
        long_prefill_tokens_per_s=prefill * 0.9 if long else None,
        long_ttft_s=ttft + 5000 / prefill if long else None,
    )


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    pool = draw(st.lists(curves(), min_size=1, max_size=12))
    out = []
    for i, curve in enumerate(pool):
        price = draw(st.sampled_from(["rent", "buy", "owned", "none", "rent+buy"]))
        out.append(
            Candidate(
                label=f"c{i % 4}",  # repeated labels: the ranking must not depend on them
                curve=curve,
                quant=f"q{i}",
                tensor_parallel=draw(st.sampled_from([1, 2, 4, 8])),
                cards_available=draw(st.none() | st.integers(0, 200)),
                rent_usd_per_card_hour=(
                    draw(st.floats(0.2, 6)) if price in ("rent", "rent+buy") else None
                ),
                purchase_usd_per_card=(
                    draw(st.floats(1000, 40000)) if price in ("buy", "rent+buy") else None
                ),
                power_w_per_card=draw(st.floats(100, 1000)) if price != "none" else None,
                electricity_usd_per_kwh=draw(st.none() | st.floats(0.0, 0.4)),
            )
        )
    return out


@st.composite
def loads(draw: st.DrawFn) -> Load:
    long = draw(st.booleans())
    closed = draw(st.booleans())
    return Load(
        users=draw(st.integers(1, 3000)) if closed else None,
        requests_per_minute=None if closed else draw(st.floats(1, 20_000)),
        think_s=draw(st.sampled_from([0.0, 1.0, 5.0, 30.0])),
        prompt_tokens=draw(st.integers(50, 4000)),
        output_tokens=draw(st.integers(20, 1000)),
        long_prompt_tokens=draw(st.integers(4000, 30000)) if long else None,
        long_output_tokens=draw(st.none() | st.integers(20, 2000)) if long else None,
        long_share=draw(st.floats(0.0, 0.5)) if long else 0.0,
    )


@settings(max_examples=400, deadline=None)
@given(
    candidates(),
    loads(),
    st.floats(0.2, 5),
    st.floats(5, 80),
    st.sampled_from([0, 1]),
    st.integers(1, 5),
)
def test_pruning_returns_what_sizing_every_candidate_returns(
    pool: list[Candidate], load: Load, ttft: float, speed: float, spare: int, limit: int
) -> None:
    service = ServiceLevel(ttft_p95_s=ttft, tokens_per_s_per_user=speed, spare_replicas=spare)
    horizon = Horizon(months=24, electricity_usd_per_kwh=0.2)
    try:
        reference = plan(
            load=load, service=service, candidates=pool, horizon=horizon, limit=limit,
            prune=False,
        )  # fmt: skip
    except Exception as error:  # the same refusal either way (no fit anywhere)
        try:
            plan(load=load, service=service, candidates=pool, horizon=horizon, limit=limit)
        except Exception as pruned_error:
            assert (type(pruned_error), str(pruned_error)) == (type(error), str(error))
            return
        raise AssertionError("the pruned plan did not refuse") from error
    pruned = plan(load=load, service=service, candidates=pool, horizon=horizon, limit=limit)
    assert pruned == reference


def _pool(n: int) -> list[Candidate]:
    """n cards x TP 1/2/4/8, step 10 ms + 0.05 ms per sequence at TP1 (halved per doubling),
    300 sequences per card, rents 1.00, 1.10, 1.20, ... USD per card-hour."""
    out = []
    for card in range(n):
        for tp in (1, 2, 4, 8):
            ladder = (1, 2, 4, 8, 16, 32, 64, 128, 256, 300 * tp)
            points = tuple((k, 1 / ((0.01 + 0.00005 * k) / tp)) for k in ladder)
            curve = ReplicaCurve(
                points=points, max_sequences=300 * tp, prefill_tokens_per_s=8000.0 * tp,
                ttft_s=0.05 + 0.125 / tp,
            )  # fmt: skip
            out.append(Candidate(label=f"card-{card}", curve=curve, tensor_parallel=tp,
                                 rent_usd_per_card_hour=1 + card / 10))  # fmt: skip
    return out


def test_pruning_keeps_the_rankings_of_a_larger_pool() -> None:
    # 50 cards x 4 TP = 200 candidates, 2,000 users, 5 s think, N+1: the pruned plan skips
    # most of them and still ranks exactly as sizing all of them.
    pool = _pool(50)
    load = Load(users=2000, think_s=5, prompt_tokens=1000, output_tokens=400)
    service = ServiceLevel(ttft_p95_s=1.5, tokens_per_s_per_user=30, spare_replicas=1)
    pruned = plan(load=load, service=service, candidates=pool)
    assert pruned == plan(load=load, service=service, candidates=pool, prune=False)
    # The cheapest is card-0 (1.00 USD/h, the cheapest card); the plans rise in price.
    assert pruned.cheapest is not None and pruned.cheapest.label == "card-0"
    prices = [p.monthly_usd or 0 for p in pruned.plans]
    assert prices == sorted(prices) and len(prices) == 10
