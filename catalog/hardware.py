"""What a catalog card really is to an engine: the memory one device exposes, the devices
on a board, the speed profile its memory technology selects, and which engines run on it.

Units: the estimator's `device.memory_gb` is decimal GB (10^9 bytes). GPU memory is built
in binary sizes, so a card sold as "80 GB" holds 80 GiB (85.9 x 10^9 bytes), and its
driver reports a little less to engines (an H100 80 GB: 79.19 GiB in vLLM's log). Per
device this module takes, in order:

1. `memory_reported_gib` x 2^30: the total the driver reports (published logs, sourced);
2. `memory_gib` x 2^30 / chips_per_board: the capacity as built;
3. `memory_gb` x 2^30 / chips_per_board: the vendor's figure read as binary (a row
   without memory_gib; GDDR and HBM parts come in binary sizes).

The engine rules on top (estimator.memory.usable_bytes_per_device): llama.cpp uses that
total minus its 1 GiB device margin (driver context, scratch), vLLM gpu_memory_utilization
x that total, Apple the default Metal working set (2/3 of RAM up to 36 GiB, 3/4 above).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from catalog.models import Accelerator, EngineSupport, InferenceEngine
from estimator.engines import engine_by_slug
from estimator.units import GIB

# A card's default engine when an admin set none: llama.cpp first, as the portal's speed
# model is calibrated on it and GGUF quants cover every card size; then vLLM for hardware
# llama.cpp does not run on (TPU, Gaudi).
ENGINE_PREFERENCE = ("llama.cpp", "vllm", "sglang", "tensorrt-llm", "ollama", "mlx")
# Of several backends one engine has on a card, the vendor's native one first; Vulkan is
# the portable fallback (e.g. llama.cpp on Kepler cards that CUDA builds dropped).
BACKEND_PREFERENCE = (
    "cuda",
    "rocm",
    "metal",
    "cann",
    "musa",
    "sycl",
    "tpu",
    "hpu",
    "xpu",
    "vulkan",
    "cpu",
)
# The estimator's speed groups split llama.cpp by "datacenter" (HBM) and "consumer"
# (GDDR, LPDDR and unified DDR): the memory technology, not the market segment.
SPEED_CLASS = {"hbm": "datacenter", "gddr": "consumer", "lpddr": "consumer", "ddr": "consumer"}


def chips(card: Accelerator) -> int:
    return max(1, card.chips_per_board or 1)


def device_memory_bytes(card: Accelerator) -> int:
    """Memory one device reports to engines, in bytes (see the module docstring)."""
    if card.memory_reported_gib:
        return round(card.memory_reported_gib * GIB)
    return round((card.capacity_gib or 0.0) * GIB / chips(card))


def memory_basis(card: Accelerator) -> str:
    """Which figure device_memory_bytes used: "reported", "built" or "assumed_binary"."""
    if card.memory_reported_gib:
        return "reported"
    return "built" if card.memory_gib else "assumed_binary"


def per_device(value: float | None, card: Accelerator) -> float | None:
    """A per-board figure (bandwidth, TFLOPS) for one of the board's devices."""
    return None if value is None else value / chips(card)


def base_configuration_price(card: Accelerator) -> bool:
    """Whether the catalog's price is a base configuration's ("from $3,999"), not the
    configuration the row describes. A row whose price_configuration names what the price
    buys is priced as described (the seed fills it for every priced row). Without one,
    only words are left: an Apple row with a price, or any row whose notes or price source
    say "base price" or "from $", is read as a base configuration's price (an admin-added
    row priced "from" a base model)."""
    if card.price_usd is None or card.price_configuration.strip():
        return False
    if card.vendor.strip().lower() == "apple":
        return True
    source = card.sources.get("price_usd", "") if isinstance(card.sources, dict) else ""
    text = f"{card.notes} {source}".lower()
    return "base price" in text or "from $" in text


# Form factors sold only inside a server (an HGX / OAM baseboard or a superchip tray).
MODULE_FORM_FACTORS = ("sxm", "oam", "superchip", "hgx")


def is_module(card: Accelerator) -> bool:
    """Whether the card is an SXM / OAM module (or a superchip): not sold as a card."""
    form = card.form_factor.strip().lower()
    return any(word in form for word in MODULE_FORM_FACTORS)


@dataclass(frozen=True)
class OwnedUnit:
    """What owning one device costs, for estimator.cost.system_purchase_usd /
    system_power_w: `price_usd` and `power_w` per device, `host` whether a host allowance
    (HOST_ALLOWANCE_USD, HOST_POWER_W) comes on top, and the `basis`: "card" (a PCIe card
    in a host), "system" (a whole computer: unified memory), "server" (an SXM / OAM
    module's share of its server, host included) or "unpriced" (a module whose server
    price is unknown: its module price would describe a machine nobody can buy)."""

    price_usd: float | None
    power_w: float | None
    host: bool
    basis: str


def owned_unit(card: Accelerator) -> OwnedUnit:
    """How one device of `card` is owned (OwnedUnit): SXM / OAM modules at their server's
    price and power over its modules; unified-memory machines as sold; cards with a host."""
    if card.memory_kind == "unified":
        return OwnedUnit(card.price_usd, card.tdp_w, False, "system")
    if not is_module(card):
        return OwnedUnit(card.price_usd, card.tdp_w, True, "card")
    modules = card.server_modules or 0
    if not card.server_price_usd or modules < 1:
        return OwnedUnit(None, None, False, "unpriced")
    power = card.server_power_w / modules if card.server_power_w else None
    return OwnedUnit(card.server_price_usd / modules, power, False, "server")


def speed_class(card: Accelerator) -> str | None:
    """The estimator's device_class from the memory technology; None when memory_type is
    blank (the estimator then guesses from name and bandwidth)."""
    return SPEED_CLASS.get(card.memory_technology)


@dataclass(frozen=True)
class EngineChoice:
    """One engine on one card through one backend (a row of the support matrix)."""

    engine: str  # estimator name, "llama.cpp"
    backend: str
    status: str  # supported | plugin | experimental
    package: str
    source: str


@dataclass(frozen=True)
class _Row:
    choice: EngineChoice
    vendor: str
    architectures: frozenset[str]


@dataclass(frozen=True)
class SupportMatrix:
    """The engine support matrix, loaded once per page (support_matrix())."""

    rows: tuple[_Row, ...]
    engine_by_id: dict[int, str]
    # (vendor, architecture) -> engines: a page asks for ~1,000 cards of a few dozen kinds.
    _memo: dict[tuple[str, str], tuple[EngineChoice, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def engines_for(self, card: Accelerator) -> tuple[EngineChoice, ...]:
        """Every engine that runs on the card, one backend each (the preferred one),
        in ENGINE_PREFERENCE order. A card whose architecture is blank matches only
        rows that cover every architecture of its vendor."""
        key = (card.vendor.strip().casefold(), card.architecture.strip().casefold())
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._engines(*key)
        return found

    def _engines(self, vendor: str, arch: str) -> tuple[EngineChoice, ...]:
        matches = [
            row.choice
            for row in self.rows
            if row.vendor == vendor and (not row.architectures or arch in row.architectures)
        ]
        best: dict[str, EngineChoice] = {}
        for choice in sorted(matches, key=lambda c: _rank(BACKEND_PREFERENCE, c.backend)):
            best.setdefault(choice.engine, choice)
        return tuple(sorted(best.values(), key=lambda c: _rank(ENGINE_PREFERENCE, c.engine)))

    def default_for(self, card: Accelerator) -> EngineChoice | None:
        """The admin's default engine when it runs on the card, else the first one."""
        runnable = self.engines_for(card)
        chosen = self.engine_by_id.get(card.default_engine_id or 0)
        picked = next((c for c in runnable if c.engine == chosen), None)
        return picked or (runnable[0] if runnable else None)

    def default_first(self, card: Accelerator) -> list[EngineChoice]:
        """The engines that run on the card, its default first."""
        default = self.default_for(card)
        others = [c for c in self.engines_for(card) if c != default]
        return [default, *others] if default else []

    def choice(self, card: Accelerator, engine: str) -> EngineChoice | None:
        """`engine` on this card, or None when it does not run there."""
        return next((c for c in self.engines_for(card) if c.engine == engine), None)


def _rank(order: Sequence[str], name: str) -> int:
    return order.index(name) if name in order else len(order)


def engine_name(slug: str) -> str:
    """The estimator's name of a catalog engine slug (estimator.engines' table: "llama-cpp"
    is "llama.cpp"); an engine the estimator does not size keeps its slug."""
    capability = engine_by_slug(slug)
    return capability.name if capability else slug


def _row(engine_slug: str, fields: Mapping[str, Any]) -> _Row | None:
    """One support row, from the database or the seed file; None for the host CPU, and for
    an experimental backend the estimator's engine table gives no launch command on (MLX's
    CUDA build: in the catalog with its source, never offered on an NVIDIA card)."""
    if fields["backend"] == "cpu":  # the host CPU, not the card
        return None
    capability = engine_by_slug(engine_slug)
    experimental = fields.get("status") == "experimental"
    if capability and experimental and fields["backend"] not in capability.launch_backends:
        return None
    choice = EngineChoice(
        engine=engine_name(engine_slug),
        backend=fields["backend"],
        status=fields.get("status") or "supported",
        package=fields.get("package") or "",
        source=fields["source"],
    )
    architectures = frozenset(a.strip().casefold() for a in fields.get("architectures") or [])
    return _Row(choice, fields["vendor"].strip().casefold(), architectures)


def _rows(pairs: Iterable[tuple[str, Mapping[str, Any]]]) -> tuple[_Row, ...]:
    return tuple(row for slug, fields in pairs if (row := _row(slug, fields)) is not None)


@cache
def _seed_rows() -> tuple[_Row, ...]:
    """catalog/data/engine_support.json, for a database load_catalog has not filled yet."""
    path = Path(__file__).resolve().parent / "data" / "engine_support.json"
    return _rows((r["engine"], r) for r in json.loads(path.read_text(encoding="utf-8")))


def support_matrix() -> SupportMatrix:
    """The matrix in two queries (support rows with their engine; engine names). An
    empty table (a database load_catalog has not filled) reads the seed file instead, so
    a card never gets an engine by vendor guesswork."""
    engines = {
        pk: engine_name(slug) for pk, slug in InferenceEngine.objects.values_list("pk", "slug")
    }
    fields = ("backend", "vendor", "architectures", "status", "package", "source")
    rows = EngineSupport.objects.values("engine__slug", *fields)
    built = _rows((row["engine__slug"], row) for row in rows)
    return SupportMatrix(built or _seed_rows(), engines)
