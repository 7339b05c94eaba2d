"""Imputed FP16 compute rates for devices that publish none.

The decode step's compute term, 2 x active params / (fp16 TFLOPS x decode_mfu), and the
prefill model both need the device's dense FP16 rate. Apple publishes none for its GPUs,
and several catalog and imported cards lack one, so this module imputes it from the
architecture, the number of compute units and the clock:

    TFLOPS = units x FLOP per unit per clock x clock (MHz) / 1e6

with the FLOP per unit per clock of the architecture (ARCHITECTURES, each with its
source):

- Apple M1 to M4 GPUs: units = GPU cores, 256 FLOP per core per clock = 128 FP32 ALUs x 2
  (one FMA). Apple GPUs run FP16 at the FP32 rate and have no matrix units, so the shader
  rate is the matrix rate (github philipturner/metal-benchmarks README, "Apple described
  each GPU core as having 128 ALUs"; F16 and F32 256 OPs per core-cycle on M1 / A15 and
  later). M2 Max 38-core: 38 x 128 x 2 x 1.398 GHz = 13.6 TFLOPS.
- NVIDIA: units = SMs, the dense FP16 tensor rate with FP32 accumulate per SM per clock
  from NVIDIA's whitepapers: Volta 1024; Turing, Ampere GA10x, Ada and Blackwell GB20x
  1024 (GeForce cards run FP32 accumulate at half that, 512); Ampere GA100 2048; Hopper
  4096. RTX 3090: 82 SMs x 512 x 1.695 GHz = 71.2 TFLOPS (whitepaper: 71).
- AMD: units = CUs: CDNA 1 and 2 1024 and CDNA 3 2048 matrix FP16 FLOP per CU per clock;
  RDNA 2 256 (packed FP16) and RDNA 3 / 3.5 512 (WMMA).
- Intel: units = Xe-cores: Xe-HPG 2048 (16 XMX engines x 128 FP16 ops), Xe-HPC 4096.

Anything else (Pascal and older, GCN, RDNA 1 and 4, CDNA 4, datacenter Blackwell, Xe2,
Apple M5 with its GPU neural accelerators) gives None: the caller then reports the
compute term as unknown rather than computing with 0. The clock is the boost clock the
source states (a peak: sustained clocks can be lower). data/compute_units.csv holds the
unit counts and clocks of the catalog devices without an FP16 rate, one source per row.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

UNITS_CSV = Path(__file__).resolve().parent.parent / "data" / "compute_units.csv"

# What a vendor's compute unit is called (ImputedRate.unit_kind), and its label.
UNIT_KINDS = {"gpu_core": "GPU cores", "sm": "SMs", "cu": "CUs", "xe_core": "Xe-cores"}
VENDOR_UNITS = {"apple": "gpu_core", "nvidia": "sm", "amd": "cu", "intel": "xe_core"}


@dataclass(frozen=True)
class ArchitectureRate:
    """Dense FP16 FLOP per unit per clock of one architecture, and where it is stated."""

    flop_per_unit_clock: int
    basis: str  # what the figure is, for the explanation
    source: str


# GeForce cards run FP16 tensor maths with FP32 accumulate at half the FP16-accumulate
# rate; professional and datacenter cards at the full rate (the whitepaper tables below).
_GEFORCE_SHARE = 2
_TURING = ArchitectureRate(
    1024,
    "Turing tensor cores, 8 per SM x 64 FMA",
    "NVIDIA Turing GPU Architecture whitepaper, Appendix A: RTX 2080 Ti FE 113.8 FP16 "
    "tensor TFLOPS with FP16 accumulate, 56.9 with FP32 accumulate (68 SMs, 1635 MHz); "
    "TITAN RTX 130.5 with either (72 SMs, 1770 MHz)",
)
_AMPERE_GA10X = ArchitectureRate(
    1024,
    "Ampere GA10x tensor cores, 4 per SM x 128 dense FMA",
    "NVIDIA Ampere GA102 GPU Architecture whitepaper, Appendix A: RTX 3090 142 FP16 tensor "
    "TFLOPS with FP16 accumulate, 71 with FP32 accumulate (82 SMs, 1695 MHz); RTX A6000 "
    "154.8 with FP32 accumulate (84 SMs, 1800 MHz)",
)
ARCHITECTURES: dict[str, ArchitectureRate] = {
    "apple": ArchitectureRate(
        256,
        "FP16 runs at the FP32 rate, no matrix units",
        "github philipturner/metal-benchmarks README (Apple: 128 ALUs per GPU core; F16 and "
        "F32 OPs per core-cycle 256 on M1 / A15 and later; M2 Max 38 cores at 1.398 GHz = "
        "13,600 GFLOPS)",
    ),
    "volta": ArchitectureRate(
        1024,
        "Volta tensor cores, 8 per SM x 64 FMA",
        "NVIDIA Volta whitepaper (V100: 640 tensor cores, 64 FMA per clock each, 125 tensor "
        "TFLOPS at 80 SMs and 1530 MHz); cvw.cac.cornell.edu/gpu-architecture/"
        "gpu-example-tesla-v100/tensor_cores (1024 FLOP per SM per clock)",
    ),
    "turing": _TURING,
    "ampere": _AMPERE_GA10X,
    "ampere ga100": ArchitectureRate(
        2048,
        "Ampere GA100 tensor cores, 4 per SM x 256 dense FMA",
        "NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 1: 312 FP16 tensor "
        "TFLOPS dense with FP32 accumulate (108 SMs, 1410 MHz)",
    ),
    "ada lovelace": ArchitectureRate(
        1024,
        "Ada tensor cores, 4 per SM x 128 dense FMA",
        "NVIDIA Ada GPU Architecture whitepaper, Appendix A: RTX 4090 330.3 FP16 tensor TFLOPS "
        "with FP16 accumulate, 165.2 with FP32 accumulate (128 SMs, 2520 MHz); RTX 6000 Ada "
        "364.2 with FP32 accumulate (142 SMs, 2505 MHz)",
    ),
    "hopper": ArchitectureRate(
        4096,
        "Hopper tensor cores, 4 per SM x 512 dense FMA",
        "NVIDIA H100 Tensor Core GPU Architecture whitepaper V1.04, Table 3: H100 SXM5 989.4 "
        "dense FP16 / BF16 tensor TFLOPS with FP32 accumulate (132 SMs; 1830 MHz)",
    ),
    "blackwell gb20x": ArchitectureRate(
        1024,
        "Blackwell GB20x tensor cores, 4 per SM x 128 dense FMA",
        "NVIDIA RTX Blackwell GPU Architecture whitepaper V1.1, Appendix A: RTX 5090 209.5 "
        "FP16 tensor TFLOPS with FP32 accumulate (170 SMs, 2407 MHz), GeForce half rate",
    ),
    "cdna 1": ArchitectureRate(
        1024,
        "CDNA matrix cores, FP16",
        "AMD Instinct MI100 (CDNA) white paper: 184.6 FP16 matrix TFLOPS = 120 CUs x 1024 "
        "FLOP x 1.502 GHz",
    ),
    "cdna 2": ArchitectureRate(
        1024,
        "CDNA 2 matrix cores, FP16",
        "AMD CDNA 2 white paper: MI250X 383 FP16 matrix TFLOPS = 220 CUs x 1024 FLOP x 1.7 GHz",
    ),
    "cdna 3": ArchitectureRate(
        2048,
        "CDNA 3 matrix cores, FP16",
        "rocm.docs.amd.com conceptual/gpu-arch/mi300 (MI300X: Matrix FP16 2048 FLOPS per "
        "clock per CU, 1307.4 peak TFLOPS)",
    ),
    "rdna 2": ArchitectureRate(
        256,
        "RDNA 2 packed FP16 (no matrix units)",
        "gpuopen.com/learn/wmma_on_rdna3 (RX 6950 XT, RDNA 2: FP16 256 FLOPS per clock per CU)",
    ),
    "rdna 3": ArchitectureRate(
        512,
        "RDNA 3 WMMA, FP16",
        "gpuopen.com/learn/wmma_on_rdna3 (RX 7900 XTX, RDNA 3: FP16 512 FLOPS per clock per "
        "CU); RDNA 3.5 as RDNA 3, as the catalog's Radeon 8060S row derives",
    ),
    "xe-hpg": ArchitectureRate(
        2048,
        "Xe-HPG, 16 XMX engines x 128 FP16 ops",
        "Intel Xe-HPG architecture (Architecture Day 2021): 16 XMX engines per Xe-core, 128 "
        "FP16 / BF16 ops per engine per clock (m.yd166.com/jingyan/5611804206_3.html; "
        "tomshardware.com/features/intel-ponte-vecchio-and-xe-hpc-architecture-built-for-"
        "big-data: Xe-HPC engines are 4x as wide)",
    ),
    "xe-hpc": ArchitectureRate(
        4096,
        "Xe-HPC, 8 XMX engines",
        "tomshardware.com/features/intel-ponte-vecchio-and-xe-hpc-architecture-built-for-"
        "big-data (Intel Architecture Day 2021: each Xe-HPC core does 4096 FP16 or BF16 "
        "matrix operations per clock)",
    ),
}
_APPLE_GENERATIONS = ("apple m1", "apple m2", "apple m3", "apple m4")
# GA100 products by name (A100, A30, A800; not "RTX A3000"), and Turing chips without
# tensor cores (TU116 / TU117: GeForce GTX 16 and MX cards).
_GA100_NAME = re.compile(r"\ba(100|30|800)\b")
_TURING_WITHOUT_TENSOR = re.compile(r"\bgtx\b|\bmx\d|^tu11[67]")
# GB20x chips of GeForce RTX 50 and RTX PRO cards (not GB20B, the GB10 SoC of DGX Spark).
_GB20X_CHIP = re.compile(r"^gb20\d")
# China-market parts whose tensor rate NVIDIA caps below what their SMs and clock give
# (catalog: L20 119.5 against 237 from 92 SMs; RTX 5090 D 148.5 against 209.5).
_CAPPED = re.compile(r"\d{4} ?d( v2)?$|\b6000d\b|\b[hl]20\b")


def _nvidia_key(architecture: str, name: str, chip: str) -> str | None:
    """The ARCHITECTURES key of an NVIDIA GPU: GA100 (A100, A30, A800) apart from the other
    Ampere chips, Blackwell only for the GB20x chips of GeForce RTX 50 and RTX PRO cards
    (datacenter Blackwell and the GB10 SoC differ and are left out), no Turing card
    without tensor cores and no China-market part with a capped tensor rate (_CAPPED)."""
    arch, lowered, chip = architecture.lower(), name.lower(), chip.lower()
    if _CAPPED.search(lowered):
        return None
    if arch.startswith("ampere"):
        ga100 = chip.startswith("ga100") or bool(_GA100_NAME.search(lowered))
        return "ampere ga100" if ga100 else "ampere"
    if arch.startswith("turing") and (
        _TURING_WITHOUT_TENSOR.search(lowered) or _TURING_WITHOUT_TENSOR.search(chip)
    ):
        return None
    if arch.startswith("blackwell"):
        gb20x = _GB20X_CHIP.match(chip) if chip else "geforce" in lowered or "rtx" in lowered
        return "blackwell gb20x" if gb20x else None
    for key in ("volta", "turing", "ada lovelace", "hopper"):
        if arch.startswith(key) or (key == "ada lovelace" and arch == "ada"):
            return key
    return None


def architecture_rate(
    vendor: str, architecture: str, *, name: str = "", chip: str = ""
) -> ArchitectureRate | None:
    """The FP16 FLOP per unit per clock of `architecture` ("Apple M4", "Ampere", "CDNA 3",
    "RDNA 3.5", "Xe-HPG" ...), with the GeForce half rate applied when `name` is a
    GeForce card; None for an architecture without a sourced rate. `chip` (TechPowerUp's
    GPU name, "GA100") tells Ampere and Blackwell chips apart."""
    vendor, arch = vendor.strip().lower(), architecture.strip().lower()
    if vendor == "apple":
        return ARCHITECTURES["apple"] if arch.startswith(_APPLE_GENERATIONS) else None
    if vendor == "nvidia":
        key = _nvidia_key(arch, name, chip)
        rate = ARCHITECTURES.get(key) if key else None
        if rate is None or key in ("volta", "hopper", "ampere ga100"):
            return rate
        if "geforce" in name.lower():
            return ArchitectureRate(
                rate.flop_per_unit_clock // _GEFORCE_SHARE,
                f"{rate.basis}, GeForce FP32 accumulate at half rate",
                rate.source,
            )
        return rate
    if vendor == "amd":
        key = "rdna 3" if arch.startswith("rdna 3") else arch.replace(".0", "")
        key = "cdna 1" if key == "cdna" else key
        return ARCHITECTURES.get(key) if key.startswith(("cdna", "rdna")) else None
    if vendor == "intel":
        return ARCHITECTURES.get(arch)
    return None


@dataclass(frozen=True)
class ImputedRate:
    """An imputed dense FP16 rate: units x flop_per_unit_clock x clock_mhz / 1e6 TFLOPS."""

    tflops: float
    units: int
    unit_kind: str  # UNIT_KINDS: "gpu_core" | "sm" | "cu" | "xe_core"
    clock_mhz: float
    flop_per_unit_clock: int
    explanation: str  # the arithmetic, in words
    source: str = ""  # where the unit count and clock come from

    @property
    def clock_ghz(self) -> float:
        return self.clock_mhz / 1000


def impute(
    vendor: str,
    architecture: str,
    units: int,
    boost_clock_mhz: float,
    *,
    name: str = "",
    chip: str = "",
    source: str = "",
) -> ImputedRate | None:
    """The imputed rate of `units` compute units (GPU cores, SMs, CUs or Xe-cores, by
    vendor) at `boost_clock_mhz`; None without a sourced architecture rate or with no
    units or clock. The explanation spells out the product (module docstring)."""
    rate = architecture_rate(vendor, architecture, name=name, chip=chip)
    if rate is None or units <= 0 or boost_clock_mhz <= 0:
        return None
    kind = VENDOR_UNITS[vendor.strip().lower()]
    tflops = units * rate.flop_per_unit_clock * boost_clock_mhz / 1e6
    ghz = f"{boost_clock_mhz / 1000:g}"
    if kind == "gpu_core":
        product = f"{units} GPU cores x 128 ALUs x 2 FLOP (FMA) x {ghz} GHz"
    else:
        product = f"{units} {UNIT_KINDS[kind]} x {rate.flop_per_unit_clock} FLOP/clock x {ghz} GHz"
    basis = f"{architecture} GPU: {rate.basis}" if kind == "gpu_core" else rate.basis
    explanation = f"{product} = {tflops:.1f} TFLOPS ({basis})"
    return ImputedRate(
        tflops, units, kind, boost_clock_mhz, rate.flop_per_unit_clock, explanation, source
    )


@cache
def _catalog_units() -> dict[tuple[str, str], dict[str, str]]:
    """data/compute_units.csv by (lower-case vendor, device name), read once."""
    with UNITS_CSV.open(encoding="utf-8", newline="") as handle:
        return {(r["vendor"].strip().lower(), r["name"]): r for r in csv.DictReader(handle)}


def catalog_rate(vendor: str, name: str) -> ImputedRate | None:
    """The imputed rate of a catalog device from its data/compute_units.csv row (units,
    boost clock, source), or None when the table has no row for it or its architecture
    has no sourced rate."""
    row = _catalog_units().get((vendor.strip().lower(), name))
    if row is None:
        return None
    return impute(
        row["vendor"],
        row["architecture"],
        int(row["units"]),
        float(row["boost_clock_mhz"]),
        name=name,
        source=row["source"],
    )
