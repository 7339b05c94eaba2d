"""Sweep one model over 1,000 synthetic devices x all 27 GGUF file types.

    python benchmarks/estimator_bench.py [--config PATH]

Prints the time of the first (cold: tensor inventory and per-quant weights) and of the
repeated (warm) sweep, and evaluations per second. Target: the full sweep under 0.5 s on
one core. The heavy parts are cached per model and per quant (estimator/api/cache.py), so
the per-(device, quant) work is a few additions and one decode-speed formula.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from estimator.api import Device, parse_request  # noqa: E402
from estimator.api.sweep import sweep  # noqa: E402
from estimator.weights import GGUF_FILE_TYPES  # noqa: E402

DEFAULT_CONFIG = ROOT / "estimator/data/validation/configs/meta-llama__Llama-3.1-8B-Instruct.json"


def synthetic_devices(n: int, seed: int = 0) -> list[Device]:
    """Devices from 4 to 192 GB, 100 to 8,000 GB/s, 10 to 2,000 TFLOPS (reproducible)."""
    rng = random.Random(seed)
    return [
        Device(
            memory_gb=rng.uniform(4, 192),
            bandwidth_gbps=rng.uniform(100, 8000),
            fp16_tflops=rng.uniform(10, 2000),
            memory_kind=rng.choice(["discrete", "unified"]),
            name=f"synthetic-{i}",
        )
        for i in range(n)
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--devices", type=int, default=1000)
    args = parser.parse_args()
    request = parse_request(
        {
            "model": {"hf_config": json.loads(args.config.read_text())},
            "device": {"memory_gb": 24, "bandwidth_gbps": 1000},
            "workload": {"context_tokens": 8192},
        }
    )
    devices = synthetic_devices(args.devices)
    quants = list(GGUF_FILE_TYPES)
    timings = []
    for _ in range(4):
        start = time.perf_counter()
        rows = sweep(request, devices, quants)
        timings.append(time.perf_counter() - start)
    evaluations = len(rows)
    warm = min(timings[1:])
    fits = sum(row.verdict != "does_not_fit" for row in rows)
    print(
        f"model: {args.config.name}; {len(devices)} devices x {len(quants)} GGUF types "
        f"= {evaluations} evaluations ({fits} fit)"
    )
    print(f"cold sweep (inventory + per-quant weights): {timings[0]:.3f} s")
    print(
        f"warm sweep: {warm:.3f} s = {evaluations / warm:,.0f} evaluations/s "
        f"({'meets' if warm < 0.5 else 'MISSES'} the 0.5 s target)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
