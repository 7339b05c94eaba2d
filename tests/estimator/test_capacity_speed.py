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
    slots_at,
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


@st.composite
def irregular_curves(draw: st.DrawFn) -> ReplicaCurve:
    """A replica whose per-user speed need not fall as sequences are added (the step times
    do not rise everywhere): the planner's curve lookups scan these instead of bisecting."""
    limit = draw(st.integers(1, 600))
    ladder = sorted({n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) if n <= limit} | {limit})
    speeds = draw(st.lists(st.floats(5, 200), min_size=len(ladder), max_size=len(ladder)))
    prefill = draw(st.floats(500, 50_000))
    return ReplicaCurve(
        points=tuple(zip(ladder, speeds, strict=True)),
        max_sequences=limit,
        prefill_tokens_per_s=prefill,
        ttft_s=draw(st.floats(0.02, 1.0)),
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(irregular_curves() | curves(), min_size=1, max_size=10),
    loads(),
    st.floats(0.2, 5),
    st.floats(5, 80),
    st.sampled_from([0, 1]),
)
def test_pruning_matches_sizing_on_irregular_curves(
    pool: list[ReplicaCurve], load: Load, ttft: float, speed: float, spare: int
) -> None:
    service = ServiceLevel(ttft_p95_s=ttft, tokens_per_s_per_user=speed, spare_replicas=spare)
    candidates = [
        Candidate(
            label=f"c{i}",
            curve=curve,
            tensor_parallel=1 + i % 3,
            rent_usd_per_card_hour=1.0 + (i % 4) / 4,
        )
        for i, curve in enumerate(pool)
    ]
    try:
        reference = plan(load=load, service=service, candidates=candidates, prune=False)
    except Exception as error:
        try:
            plan(load=load, service=service, candidates=candidates)
        except Exception as pruned_error:
            assert (type(pruned_error), str(pruned_error)) == (type(error), str(error))
            return
        raise AssertionError("the pruned plan did not refuse") from error
    assert plan(load=load, service=service, candidates=candidates, limit=3) == plan(
        load=load, service=service, candidates=candidates, limit=3, prune=False
    )
    assert plan(load=load, service=service, candidates=candidates) == reference


def test_a_curve_whose_speed_rises_is_looked_up_by_scanning() -> None:
    # Speeds 40, 25, 50, 20 tok/s at 1, 2, 4, 8 sequences: steps 25, 40, 20, 50 ms do not
    # rise everywhere, so no bisection (which would land between 4 and 8). At 30 tok/s
    # (33.3 ms) the first step above it is 2's (40 ms): between 1 (25 ms) and 2, slope 15
    # ms a sequence, 1 + int(8.33 / 15) = 1 slot. At 60 tok/s (16.7 ms) not even one.
    # At 20 tok/s (50 ms) no step is above: all 8.
    curve = ReplicaCurve(
        points=((1, 40.0), (2, 25.0), (4, 50.0), (8, 20.0)), max_sequences=8,
        prefill_tokens_per_s=10_000, ttft_s=0.1,
    )  # fmt: skip
    assert not curve.rising
    assert slots_at(curve, 30.0) == 1
    assert slots_at(curve, 60.0) == 0
    assert slots_at(curve, 20.0) == 8
    rising = ReplicaCurve(
        points=((1, 40.0), (2, 30.0), (4, 25.0)), max_sequences=4,
        prefill_tokens_per_s=10_000, ttft_s=0.1,
    )  # fmt: skip
    # steps 25, 33.3, 40 ms; at 28 tok/s (35.7 ms): between 2 and 4, slope 3.33 ms a
    # sequence, 2 + int(2.38 / 3.33) = 2 slots.
    assert rising.rising and slots_at(rising, 28.0) == 2
