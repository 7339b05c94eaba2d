"""What every frozen snapshot has in common: the figures a saved row keeps (and its share
page shows) are JSON with a `version`, read through one upgrade path.

Each kind is a frozen dataclass with `to_json()` and `from_json()` in its own app
(reports.snapshots.ConfigurationSnapshot, planner.snapshots.PlanSnapshot). `from_json` calls
`upgraded` first: JSON without a "version" is version 1 (rows saved before snapshots were
versioned); each step of the kind's `steps` takes version n to n + 1, so a reader only ever
parses the current version. A version newer than the code, or anything that is not a
snapshot, is refused (SnapshotError) rather than guessed at."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Step = Callable[[dict[str, Any]], dict[str, Any]]


class SnapshotError(ValueError):
    """A stored snapshot this code cannot read: not a JSON object of its kind, or a
    version it does not know (newer than its current one, or not a positive integer)."""


def upgraded(data: Any, *, kind: str, current: int, steps: Mapping[int, Step]) -> dict[str, Any]:
    """`data` migrated to version `current` (its "version" key set), through `steps[n]`
    (version n to n + 1) for each n from its version up. No "version" key: version 1."""
    if not isinstance(data, dict):
        raise SnapshotError(f"{kind} snapshot: expected a JSON object")
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= current:
        raise SnapshotError(f"{kind} snapshot: unknown version {version!r} (current {current})")
    try:
        for n in range(version, current):
            data = {**steps[n](data), "version": n + 1}
    except (KeyError, TypeError, AttributeError) as exc:
        raise SnapshotError(f"{kind} snapshot: version {version} unreadable ({exc!r})") from None
    return data
