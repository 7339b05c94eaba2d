"""The frozen snapshot of a saved capacity plan (SavedPlan.snapshot): the planner's answer
as the page and the API showed it, so the plan's report shows the same figures after the
catalog or the prices change, until an editor recomputes it. Versioned JSON
(sizing_site.sharing.snapshots):

- version 3, written since plans keep their cost's basis: version 2's keys and "cost": the
  cheapest plan's monthly cost with its basis (PlanCost), or null without a plan.
- version 2, written since snapshots carry a version: {"version": 2, "answer": the
  planner's answer (planner.output.planned_data), "model_name", "computed_at": ISO 8601,
  "prices_checked_at": ISO 8601 or null: the latest check of the cloud prices the org saw}.
  Read through `_from_v2`: "cost" null (its basis not recorded; the answer keeps the
  figures themselves).
- version 1: no "version" key, every plan saved before it (read through `_from_v1`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sizing_site.sharing.snapshots import SnapshotError, upgraded

VERSION = 3
KIND = "plan"
# What a plan's cheapest option says in brief (top_plan): the saved list, the API's
# summary and the report's before/after table.
TOP_PLAN_KEYS = ("label", "engine", "quant", "tensor_parallel", "cards", "monthly_usd")


@dataclass(frozen=True)
class PlanCost:
    """The cheapest plan's cost a month (capacity.Plan.monthly_usd: the lower of renting and
    owning its cards, for the whole load at the service level, spares included) and its
    basis. "rented": `cards` x usd_per_card_hour x 24 h x 365/12 days from `provider`'s
    `instance` (`negotiated`: the organisation's own price; `internal_rate`: one of its
    machines at its internal hourly rate). "owned": the purchase (purchase_usd, None for
    machines already owned: energy only) over `months`, power_w_per_card while busy
    `utilisation` of the day. checked_at: the latest price check the org saw (ISO 8601)."""

    monthly_usd: float
    basis: str  # "rented" or "owned"
    label: str
    cards: int
    provider: str = ""
    instance: str = ""
    region: str = ""
    usd_per_card_hour: float | None = None
    negotiated: bool = False
    internal_rate: bool = False
    purchase_usd: float | None = None
    usd_per_card: float | None = None
    power_w_per_card: float | None = None
    months: int | None = None
    utilisation: float | None = None
    checked_at: str | None = None

    @property
    def checked(self) -> datetime | None:
        return None if self.checked_at is None else datetime.fromisoformat(self.checked_at)

    @property
    def years(self) -> float | None:
        return None if self.months is None else self.months / 12

    @classmethod
    def from_json(cls, data: Any) -> PlanCost:
        if not isinstance(data, dict):
            raise TypeError("cost: expected a JSON object")
        return cls(**data)


@dataclass(frozen=True)
class PlanSnapshot:
    answer: dict[str, Any]  # planner.output.planned_data, as JSON
    model_name: str
    computed_at: datetime
    prices_checked_at: datetime | None
    cost: PlanCost | None = None  # None: no plan, or saved before the basis was kept
    version: int = VERSION

    def to_json(self) -> dict[str, Any]:
        """The stored JSON, at this snapshot's version (the current one: from_json
        migrates older ones)."""
        checked = self.prices_checked_at
        return {
            "version": self.version,
            "answer": self.answer,
            "model_name": self.model_name,
            "computed_at": self.computed_at.isoformat(),
            "prices_checked_at": checked.isoformat() if checked is not None else None,
            "cost": None if self.cost is None else asdict(self.cost),
        }

    @classmethod
    def from_json(cls, data: Any) -> PlanSnapshot:
        """A stored snapshot of any known version, migrated to the current one; a newer
        version or a malformed one is SnapshotError."""
        data = upgraded(data, kind=KIND, current=VERSION, steps={1: _from_v1, 2: _from_v2})
        try:
            checked, cost = data["prices_checked_at"], data["cost"]
            return cls(
                answer=data["answer"],
                model_name=data["model_name"],
                computed_at=datetime.fromisoformat(data["computed_at"]),
                prices_checked_at=datetime.fromisoformat(checked) if checked else None,
                cost=None if cost is None else PlanCost.from_json(cost),
                version=data["version"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SnapshotError(f"{KIND} snapshot: {exc!r}") from None

    def top_plan(self) -> dict[str, Any] | None:
        """The cheapest plan in brief (TOP_PLAN_KEYS); None when no plan met the load."""
        cheapest = self.answer.get("cheapest")
        if cheapest is None:
            return None
        return {key: cheapest.get(key) for key in TOP_PLAN_KEYS}


def _from_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 to 2: the same keys; a model name or a price check a row lacks reads as
    the model's slug and "never checked"."""
    return {
        **data,
        "model_name": data.get("model_name") or data["answer"]["model"],
        "prices_checked_at": data.get("prices_checked_at"),
    }


def _from_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 to 3: plans saved before the cost's basis was kept have none ("cost"
    null: the pages say "basis not recorded"; the figures stay in the answer)."""
    return {**data, "cost": None}
