"""The calibration groups a throughput.csv row belongs to, and the parents a group falls
back to (build.py fits them; speed.group_candidates looks them up in the same order)."""

from __future__ import annotations

from estimator.calibration.rows import Measurement
from estimator.speed.corrections import LOCAL_ENGINES


def group_key(m: Measurement) -> str:
    """Leaf group: llama.cpp CUDA splits by device class (README: datacenter GPUs reach a
    lower share); other backends and engines are one group each (their vendors differ
    by the vendor correction, calibration/effects.py)."""
    if m.engine == "llama.cpp" and m.backend == "cuda":
        return f"llama.cpp/cuda/{m.device.device_class}"
    return f"{m.engine}/{m.backend}"


def prefill_key(m: Measurement) -> str:
    """Prefill leaf: the decode leaf with "+moe" or "+dense" (MoE MFU is about half the
    dense one in throughput.csv: routing and per-expert matmuls on few rows each), so
    that neither kind is predicted from a blend; the plain leaf pools both."""
    return group_key(m) + ("+moe" if m.work.is_moe else "+dense")


def engine_pool(leaf: str) -> str:
    """ "llama.cpp" for the local engines (LOCAL_ENGINES: built for one user on one
    machine, so a group of theirs without enough rows falls back to llama.cpp's pool, not
    to the serving engines' multi-GPU one), "serving" for the others."""
    engine = leaf.split("/")[0].removesuffix("+moe").removesuffix("+dense")
    return "llama.cpp" if engine in LOCAL_ENGINES else "serving"


def lineage(key: str) -> tuple[str, ...]:
    """Decode: the leaf, its engine pool (engine_pool), everything."""
    pool = engine_pool(key)
    chain = (key, pool, "default")
    return tuple(k for i, k in enumerate(chain) if k not in chain[:i])


def prefill_lineage(key: str) -> tuple[str, ...]:
    """Prefill: the "+moe" / "+dense" leaf, the engine pool of the same kind, the engine
    pool, everything. The backend leaf that blends dense and MoE rows is skipped: a
    dense model on a backend with few dense rows is closer to the pooled dense MFU than
    to a blend with MoE rows at half the MFU."""
    suffix = "+moe" if key.endswith("+moe") else "+dense" if key.endswith("+dense") else ""
    leaf = key.removesuffix(suffix)
    pool = engine_pool(leaf)
    if leaf == "default":
        pool = "default"
    chain = (key, pool + suffix, pool, "default")
    return tuple(k for i, k in enumerate(chain) if k not in chain[:i])
