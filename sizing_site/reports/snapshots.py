"""The frozen snapshot of a saved configuration (SavedConfiguration.snapshot): what the
estimator answered and the catalog figures it used, so a report shows the same numbers after
the catalog changes. Versioned JSON (sizing_site.sharing.snapshots):

- version 2, written since snapshots carry a version: {"version": 2, "result": the
  estimator's result (estimator.api.result_to_dict), "bar": {"usable_bytes"}: the memory
  bar's usable mark, "backend", "setup": the sized configurator setup (catalog.sizing
  Setup as a dict), "model": ModelFacts, "accelerator": AcceleratorFacts,
  "measured_weights_bytes": the measured weights file or null, "own": OwnRows,
  "computed_at": ISO 8601}.
- version 1: no "version" key, every row saved before it (read through `_from_v1`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any

from sizing_site.sharing.snapshots import SnapshotError, upgraded

VERSION = 2
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
        }

    @classmethod
    def from_json(cls, data: Any) -> ConfigurationSnapshot:
        """A stored snapshot of any known version, migrated to the current one; a newer
        version or a malformed one is SnapshotError."""
        data = upgraded(data, kind=KIND, current=VERSION, steps={1: _from_v1})
        try:
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
