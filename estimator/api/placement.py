"""Where a setup's bytes go: the weights (Placement), the KV cache (KVPlacement) and the
memory left for it (Budget). Plain records shared by the run (estimator.api.run, which
fills them) and the explanation (estimator.api.explain, which reads them)."""

from __future__ import annotations

from dataclasses import dataclass

from estimator import kv as kvmod
from estimator import memory


@dataclass(frozen=True)
class Placement:
    """Where the weights live: bytes on the accelerators, in host memory, per device."""

    weights_bytes: int  # text weights, all of them
    multimodal_bytes: int  # vision/audio towers loaded by the engine (0 for llama.cpp)
    offloaded_bytes: int  # weights kept in host memory
    offloaded_layers: int
    device_weights_bytes: int  # on accelerators, all devices together
    per_device_weights_bytes: int
    split: str  # "none" | "tensor" | "layer"


@dataclass(frozen=True)
class KVPlacement:
    cache: kvmod.KVCache
    device_bytes: int  # on accelerators, all devices together
    per_device_bytes: int
    bytes_per_token_per_device: float


@dataclass(frozen=True)
class Budget:
    overhead: memory.Overhead
    usable_bytes: int
    kv_budget_bytes: int  # per device: usable - weights - overhead (>= 0)
