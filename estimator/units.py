"""Units and the low/estimate/high range used by every speed figure."""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30
MIB = 2**20
GB = 10**9


@dataclass(frozen=True)
class Range:
    """A central estimate with low and high bounds (same unit as the estimate)."""

    estimate: float
    low: float
    high: float

    def scaled(self, factor: float) -> Range:
        return Range(self.estimate * factor, self.low * factor, self.high * factor)

    def inverted(self, numerator: float = 1.0) -> Range:
        """numerator / value, so a speed range becomes a time range (low and high swap)."""
        return Range(numerator / self.estimate, numerator / self.high, numerator / self.low)
