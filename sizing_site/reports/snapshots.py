"""The frozen snapshot of a saved configuration (SavedConfiguration.snapshot): what the
estimator answered and the catalog figures it used, so a report shows the same numbers after
the catalog changes. Versioned JSON (sizing_site.sharing.snapshots):

- version 3, written since snapshots carry the cost: version 2's keys and "cost": the
  answer panel's cost per 1M output tokens as shown when saved, with its basis
  (CostFacts.to_json), or null when nothing could be priced.
- version 2, written since snapshots carry a version: {"version": 2, "result": the
  estimator's result (estimator.api.result_to_dict), "bar": {"usable_bytes"}: the memory
  bar's usable mark, "backend", "setup": the sized configurator setup (catalog.sizing
  Setup as a dict), "model": ModelFacts, "accelerator": AcceleratorFacts,
  "measured_weights_bytes": the measured weights file or null, "own": OwnRows,
  "computed_at": ISO 8601}.
  Read through `_from_v2`: "cost" null (not recorded).
- version 1: no "version" key, every row saved before it (read through `_from_v1`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any

from sizing_site.sharing.snapshots import SnapshotError, upgraded

VERSION = 3
KIND = "configuration"


@dataclass(frozen=True)
class ModelFacts:
    """The catalog model as sized; config_hash: the first 16 hex digits of the SHA-256 of
    its config.json (keys sorted), to tell a changed config apart."""

    name: str
    slug: str
    hf_repo: str
    params_total: int | None
    params_active: int | None
    config_hash: str


@dataclass(frozen=True)
class AcceleratorFacts:
    """The catalog card's figures as sized (catalog.Accelerator's fields of these names;
    name: its display name)."""

    name: str
    slug: str
    memory_gb: float | None
    memory_gib: float | None
    memory_reported_gib: float | None
    chips_per_board: int | None
    bandwidth_gbps: float | None
    fp16_tflops: float | None
    price_usd: float | None
    tdp_w: int | None


@dataclass(frozen=True)
class OwnRows:
    """Whether the model and the card were rows the organisation added for itself."""

    model: bool = False
    accelerator: bool = False


@dataclass(frozen=True)
class RentedOffer:
    """The cloud offer a cost was rented from (the answer panel's cheapest public USD offer
    with at least the setup's GPUs): usd_per_hour is the setup's share of the instance's
    hour (instance_usd_per_hour / offer_gpus x gpus, pricing.costs.setup_share_per_hour);
    checked_at: when its price was last checked (ISO 8601, or None: never)."""

    provider: str
    instance: str
    usd_per_hour: float
    instance_usd_per_hour: float
    gpus: int
    offer_gpus: int
    checked_at: str | None

    @property
    def checked(self) -> datetime | None:
        """checked_at as a datetime, for the templates' date filter."""
        return None if self.checked_at is None else datetime.fromisoformat(self.checked_at)

    @property
    def split(self) -> bool:
        """Whether the setup pays for part of the instance only (per GPU)."""
        return 0 < self.gpus < self.offer_gpus


@dataclass(frozen=True)
class OwnedHardware:
    """Owning the setup's hardware, as the answer panel priced it (pricing.costs.
    owned_system): the purchase (`unit`: what the catalog price is for, "card" in a host,
    "system", "server" share; `gpus` of them), the power while busy, the years it is paid
    off over, the busy share of the day, electricity and PUE; typed_price: the visitor
    typed the purchase; base_price: the catalog price is a base configuration's."""

    purchase_usd: float
    power_w: float
    years: float
    utilization: float
    usd_per_kwh: float
    pue: float
    unit: str
    gpus: int
    typed_price: bool = False
    base_price: bool = False


@dataclass(frozen=True)
class CostFacts:
    """The answer panel's cost per 1M output tokens as shown when saved, with its basis:
    `basis` "rented" (usd_per_hour / (aggregate tok/s x 3,600) x 1e6 for the `rented`
    offer) or "owned" (the owned system's cost per busy hour over the same speed,
    `owned`). It is at the aggregate decode speed of `sequences` sequences at once (1: per
    user); serving_usd_per_million is the same hour over the serving point's aggregate
    speed (serving_users users at 20 tok/s each; None: no serving point);
    owned_usd_per_million the owner's figure beside a rented one (None: no price)."""

    usd_per_million: float
    basis: str  # "rented" or "owned"
    sequences: int
    rented: RentedOffer | None = None
    owned: OwnedHardware | None = None
    owned_usd_per_million: float | None = None
    serving_usd_per_million: float | None = None
    serving_users: int = 0

    @property
    def per_user(self) -> bool:
        return self.sequences == 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> CostFacts:
        if not isinstance(data, dict):
            raise TypeError("cost: expected a JSON object")
        rented, owned = data.get("rented"), data.get("owned")
        return cls(
            **{
                **data,
                "rented": None if rented is None else RentedOffer(**rented),
                "owned": None if owned is None else OwnedHardware(**owned),
            }
        )


@dataclass(frozen=True)
class ConfigurationSnapshot:
    result: dict[str, Any]  # the estimator's JSON result (docs/estimator.md)
    usable_bytes: int  # memory the engine may use on all devices together (the bar's mark)
    backend: str
    setup: dict[str, Any]  # the sized setup: quant, context_tokens, gpus, sequences, kv, ...
    model: ModelFacts
    accelerator: AcceleratorFacts
    measured_weights_bytes: int | None
    own: OwnRows
    computed_at: datetime
    cost: CostFacts | None = None  # None: nothing priced, or saved before costs were kept
    version: int = VERSION

    def to_json(self) -> dict[str, Any]:
        """The stored JSON, at this snapshot's version (the current one: from_json
        migrates older ones)."""
        return {
            "version": self.version,
            "result": self.result,
            "bar": {"usable_bytes": self.usable_bytes},
            "backend": self.backend,
            "setup": self.setup,
            "model": asdict(self.model),
            "accelerator": asdict(self.accelerator),
            "measured_weights_bytes": self.measured_weights_bytes,
            "own": asdict(self.own),
            "computed_at": self.computed_at.isoformat(),
            "cost": None if self.cost is None else self.cost.to_json(),
        }

    @classmethod
    def from_json(cls, data: Any) -> ConfigurationSnapshot:
        """A stored snapshot of any known version, migrated to the current one; a newer
        version or a malformed one is SnapshotError."""
        data = upgraded(data, kind=KIND, current=VERSION, steps={1: _from_v1, 2: _from_v2})
        try:
            cost = data["cost"]
            return cls(
                result=data["result"],
                usable_bytes=data["bar"]["usable_bytes"],
                backend=data["backend"],
                setup=data["setup"],
                model=ModelFacts(**data["model"]),
                accelerator=AcceleratorFacts(**data["accelerator"]),
                measured_weights_bytes=data["measured_weights_bytes"],
                own=OwnRows(**data["own"]),
                computed_at=datetime.fromisoformat(data["computed_at"]),
                cost=None if cost is None else CostFacts.from_json(cost),
                version=data["version"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SnapshotError(f"{KIND} snapshot: {exc!r}") from None


def _from_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 to 2: the same keys, where older rows may lack some. A card's memory as
    built, its driver-reported memory and its devices per board came later (None: not
    recorded); so did "own" (no org had its own rows then: False, False). The oldest rows
    also keep the memory bar's drawing beside its usable mark ("bar": parts and percents,
    which nothing reads: dropped)."""
    accelerator = {f.name: data["accelerator"].get(f.name) for f in fields(AcceleratorFacts)}
    return {
        **data,
        "bar": {"usable_bytes": data["bar"]["usable_bytes"]},
        "accelerator": accelerator,
        "own": data.get("own") or asdict(OwnRows()),
    }


def _from_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 to 3: rows saved before the cost was kept have none ("cost" null: the
    pages say "cost not recorded")."""
    return {**data, "cost": None}
