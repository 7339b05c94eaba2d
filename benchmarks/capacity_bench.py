"""Plan a load over 1,000 synthetic cards x 27 quants x tensor parallel 1, 2, 4, 8 and
1 to 8 (the issue's bar: "1,000 candidate cards x 27 quants x TP 1-8 takes <= 1 s").

    python benchmarks/capacity_bench.py [--cards N]

Prints the time to build the candidates' curves (synthetic, not the estimator: the
planner's cost is what is measured) and the time of `estimator.capacity.plan` over them, for
200 users with 30 s think time and 2,000 users with 5 s, TTFT p95 <= 1.5 s and >= 30 tok/s
each, N+1, over TP 1/2/4/8 (108,000 candidates) and TP 1..8 (216,000). Target: each plan
under 1 s on one core; per candidate it is arithmetic on the precomputed curve, and the
candidates that cannot enter a ranking are pruned by bounds (docs/capacity.md, "Performance").
Each figure is the median of 3 runs; the machine's load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from estimator.capacity import (  # noqa: E402
    Candidate,
    Load,
    ReplicaCurve,
    ServiceLevel,
    plan,
)

LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
PARAMS = 32.8e9  # a 32B dense model
KV_BYTES_PER_TOKEN = 262_144  # Qwen3-32B f16: 64 layers x 2 x 8 heads x 128 x 2 B
CONTEXT = 8192
QUANT_BITS = [16, 8.5, 6.6, 5.7, 5.5, 5.0, 4.9, 4.6, 4.5, 4.4, 4.3, 4.25, 4.0, 3.9, 3.7, 3.6,
              3.5, 3.4, 3.3, 3.1, 2.9, 2.7, 2.6, 2.4, 2.2, 2.0, 1.8]  # fmt: skip


def synthetic_curve(memory_gb: float, bandwidth_gbps: float, tflops: float, bits: float,
                    tp: int) -> ReplicaCurve:  # fmt: skip
    """A replica's curve from a roofline: step = (weights + n x KV at half the context) /
    (TP x bandwidth x 0.7) + 2 ms; KV limit from memory; prefill at 40 % of TFLOPS."""
    weights = PARAMS * bits / 8
    free = tp * memory_gb * 1e9 * 0.9 - weights
    max_sequences = max(0, int(free // (KV_BYTES_PER_TOKEN * CONTEXT)))
    if max_sequences == 0:
        return ReplicaCurve(points=(), max_sequences=0, prefill_tokens_per_s=1, ttft_s=1)
    rate = tp * bandwidth_gbps * 1e9 * 0.7
    ns = sorted({n for n in LADDER if n <= max_sequences} | {max_sequences})
    points = tuple(
        (n, 1 / ((weights + n * KV_BYTES_PER_TOKEN * CONTEXT / 2) / rate + 0.002)) for n in ns
    )
    prefill = tp * tflops * 1e12 * 0.4 / (2 * PARAMS)
    return ReplicaCurve(
        points=points,
        max_sequences=max_sequences,
        prefill_tokens_per_s=prefill,
        ttft_s=1000 / prefill + 1 / points[0][1],
    )


def candidates(
    cards: int, seed: int = 0, degrees: tuple[int, ...] = (1, 2, 4, 8)
) -> list[Candidate]:
    rng = random.Random(seed)
    out = []
    for i in range(cards):
        memory, bandwidth = rng.uniform(16, 192), rng.uniform(300, 8000)
        tflops, rent = rng.uniform(50, 2000), rng.uniform(0.3, 6)
        price, power = rng.uniform(1000, 40000), rng.uniform(150, 1000)
        for q, bits in enumerate(QUANT_BITS):
            for tp in degrees:
                out.append(
                    Candidate(
                        label=f"card-{i}",
                        quant=f"q{q}",
                        tensor_parallel=tp,
                        curve=synthetic_curve(memory, bandwidth, tflops, bits, tp),
                        rent_usd_per_card_hour=rent,
                        purchase_usd_per_card=price,
                        power_w_per_card=power,
                    )
                )
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cards", type=int, default=1000)
    args = parser.parse_args()
    service = ServiceLevel(ttft_p95_s=1.5, tokens_per_s_per_user=30, spare_replicas=1)
    loads = (
        Load(users=200, think_s=30, prompt_tokens=1000, output_tokens=400),
        Load(users=2000, think_s=5, prompt_tokens=1000, output_tokens=400),
    )
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    for name, degrees in (("1/2/4/8", (1, 2, 4, 8)), ("1..8", tuple(range(1, 9)))):
        start = time.perf_counter()
        pool = candidates(args.cards, degrees=degrees)
        built = time.perf_counter() - start
        fits = sum(c.curve.max_sequences > 0 for c in pool)
        print(f"{args.cards} cards x {len(QUANT_BITS)} quants x TP {name} = {len(pool)} "
              f"candidates ({fits} fit); curves built in {built:.2f} s")  # fmt: skip
        for load in loads:
            timings = []
            for _ in range(3):
                start = time.perf_counter()
                result = plan(load=load, service=service, candidates=pool)
                timings.append(time.perf_counter() - start)
            best = statistics.median(timings)
            print(
                f"  {load.users} users, {load.think_s:g} s think: plan {best:.3f} s (median of "
                f"3) = {len(pool) / best:,.0f} candidates/s "
                f"({'meets' if best <= 1 else 'MISSES'} the 1 s target)"
            )
            if result.cheapest is not None:
                c = result.cheapest
                print(f"    cheapest: {c.label} {c.quant} TP{c.tensor_parallel} x "
                      f"{c.replicas} replicas, {c.monthly_usd:,.0f} USD/month")  # fmt: skip
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
