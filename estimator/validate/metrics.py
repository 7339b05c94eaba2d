"""A figure's errors on one data set against its targets (median, p90, max, the share
inside [low, high]), and the summary the report prints."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from estimator.calibration.fit import quantile


@dataclass(frozen=True)
class Target:
    median_pct: float | None = None
    p90_pct: float | None = None
    max_pct: float | None = None
    inside_share: float | None = None
    median_high_over_low: float | None = None


@dataclass
class Metric:
    """Errors of one figure on one data set; `misses` lists the targets not met."""

    dataset: str
    figure: str
    target: Target
    errors_pct: list[float] = field(default_factory=list)
    inside: list[bool] = field(default_factory=list)
    high_over_low: list[float] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def add(
        self, predicted: float, measured: float, low: float | None = None, high: float | None = None
    ) -> None:
        """Absolute percentage error |predicted - measured| / measured x 100."""
        self.errors_pct.append(abs(predicted - measured) / measured * 100)
        if low is not None and high is not None:
            self.inside.append(low <= measured <= high)
            self.high_over_low.append(high / low if low > 0 else math.inf)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def summary(self) -> dict[str, Any]:
        errors = sorted(self.errors_pct)
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "figure": self.figure,
            "count": len(errors),
            "skipped": sum(self.skipped.values()),
            "skipped_reasons": dict(self.skipped),
            "median_pct": statistics.median(errors) if errors else None,
            "p90_pct": quantile(errors, 0.9) if errors else None,
            "max_pct": errors[-1] if errors else None,
            "inside_share": sum(self.inside) / len(self.inside) if self.inside else None,
            "median_high_over_low": statistics.median(self.high_over_low)
            if self.high_over_low
            else None,
            "target": {k: v for k, v in asdict(self.target).items() if v is not None},
        }
        out["misses"] = misses(out, self.target)
        return out


def misses(summary: dict[str, Any], target: Target) -> list[str]:
    """Names of the targets the summary does not meet (empty: all met)."""
    out = []
    for key, limit, better in (
        ("median_pct", target.median_pct, "below"),
        ("p90_pct", target.p90_pct, "below"),
        ("max_pct", target.max_pct, "below"),
        ("inside_share", target.inside_share, "above"),
        ("median_high_over_low", target.median_high_over_low, "below"),
    ):
        value = summary[key]
        if limit is None:
            continue
        if value is None or (value > limit if better == "below" else value < limit):
            out.append(key)
    return out
