"""The hardware the speed models run on: one device's rates, how a model is spread over
several, the datacenter / consumer class and the old-generation factor of a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from estimator.factors import architecture_factors

TFLOP = 1e12


@dataclass(frozen=True)
class Device:
    """One accelerator (or the host, for CPU inference)."""

    bandwidth_gbps: float  # theoretical peak memory bandwidth of ONE device, GB/s
    fp16_tflops: float | None = None  # dense FP16/BF16 tensor rate of one device
    device_class: str = "consumer"  # "consumer" | "datacenter" (see device_class_for)
    architecture: str = ""  # GPU architecture ("Pascal", "Volta", "GCN 5") for arch_class
    # dense tensor rates at lower precisions, for the serving model's GEMMs (serving.py)
    fp8_tflops: float | None = None
    fp4_tflops: float | None = None
    int8_tops: float | None = None
    # hardware family (speed.families.device_family): picks the fitted correction and range
    family: str = ""
    vendor: str = ""  # "nvidia" | "amd" | "apple" | "intel" | ...: the vendor correction
    tdp_w: float | None = None  # board power of one device, W (speed.power_capped_tflops)


@dataclass(frozen=True)
class Parallelism:
    """How the model is spread over `n_devices` identical devices.

    mode "tensor": each device holds 1/N of every split tensor (vLLM/SGLang TP, llama.cpp
    split-mode row); every layer ends with 2 all-reduces (after attention and after the MLP,
    Megatron-LM layout, Shoeybi et al. 2019).
    mode "layer": llama.cpp's default split mode: whole layers per device, run one device
    after the other, so bandwidths do not add; only one activation hop per device boundary.
    """

    n_devices: int = 1
    mode: str = "none"  # "none" | "tensor" | "layer"
    interconnect_gbps: float = 25.0  # usable one-direction link bandwidth, GB/s (PCIe 4.0 x16)
    link_latency_s: float = 25e-6  # per all-reduce / hop; PCIe-class default, see calibration


def device_class_for(
    name: str,
    bandwidth_gbps: float,
    *,
    memory_gb: float | None = None,
    unified: bool = False,
    memory_type: str = "",
) -> str:
    """ "datacenter" for HBM accelerators, else "consumer".

    README of the validation data: datacenter GPUs reach a lower share of their bandwidth in
    llama.cpp than consumer cards (A100/H100 rows in throughput.csv: ~35-45 % vs 60-85 %).
    HBM parts are told apart by >= 1500 GB/s, no consumer marker in the name and, when the
    memory size is known, >= 40 GB of discrete memory: GDDR7 cards also pass 1500 GB/s
    (RTX 5090: 1792 GB/s, 32 GB) and unified-memory SoCs are never HBM accelerators.
    GDDR workstation cards with large memory (RTX PRO 6000, 96 GB) need their name or an
    explicit device class. A known memory type decides first: HBM is "datacenter", GDDR
    and LPDDR are "consumer", whatever the bandwidth.
    """
    memory = memory_type.strip().lower()
    if memory.startswith("hbm"):
        return "datacenter"
    if memory.startswith(("gddr", "lpddr", "ddr", "unified")):
        return "consumer"
    lowered = name.lower()
    consumer_markers = ("rtx", "geforce", "radeon", "apple", "arc")
    if unified or any(m in lowered for m in consumer_markers) or bandwidth_gbps < 1500:
        return "consumer"
    if memory_gb is not None and memory_gb < 40:
        return "consumer"
    return "datacenter"


# GPU generations whose decode falls short of the bandwidth model (no int8 MMA / fewer
# fast paths in the engines' kernels). Turing, RDNA, CDNA, Apple and newer are "".
_ARCH_CLASSES = (
    ("kepler", "pascal_or_older"),
    ("maxwell", "pascal_or_older"),
    ("pascal", "pascal_or_older"),
    ("volta", "volta"),
    ("gcn", "gcn"),
)


def arch_class(architecture: str) -> str:
    """The architecture class of a GPU for the old-generation factor: "pascal_or_older"
    (Kepler, Maxwell, Pascal), "volta", "gcn" (AMD GCN 1-5, incl. MI50/MI60), or "" for
    Turing, RDNA, CDNA, Apple and everything newer (no factor)."""
    name = architecture.strip().lower()
    return next((cls for key, cls in _ARCH_CLASSES if name.startswith(key)), "")


@cache
def architecture_factor(architecture: str) -> float:
    """Decode step-time multiplier of an old GPU generation (calibration.json
    "architecture_factors": exp(median log(measured step / predicted step)) of the class's
    rows, predicted by the fit of the newer GPUs; a class without rows takes the pooled
    factor of all old classes). 1 for current generations."""
    cls = arch_class(architecture)
    if not cls:
        return 1.0
    factors = architecture_factors()
    return factors.get(cls, factors.get("old", 1.0))
