"""Tallies of portal vs estimator per data set, and the run over every published row."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from catalog.validation.cases import (
    BY_ESTIMATOR,
    CASE_SOURCES,
    DATASET_KEYS,
    DATASETS,
    MEMORY,
    SPEED,
    Case,
    Dataset,
    Measure,
)
from catalog.validation.differences import causes, request_differences
from catalog.validation.lookup import (
    CatalogIndex,
    Match,
    Value,
    catalog_index,
    figure_value,
    match_case,
    portal_sizing,
)
from estimator import validate
from estimator.api import Request, RequestError, estimate, parse_request, result_to_dict

MEMORY_TOLERANCE_PCT = 0.5  # |portal - estimator| / estimator
SPEED_TOLERANCE_POINTS = 2.0  # |portal - estimator| / measured, in points of error


@dataclass(frozen=True)
class RowComparison:
    dataset: str
    row_id: str
    model: str  # catalog slug
    accelerator: str  # catalog slug
    gpus: int
    measured: float
    portal: float
    estimator: float
    diff_pct: float  # |portal - estimator| / estimator x 100
    diff_points: float  # |portal - estimator| / measured x 100
    differs: bool  # beyond MEMORY_TOLERANCE_PCT (memory) or SPEED_TOLERANCE_POINTS (speed)
    portal_closer: bool  # the portal's figure is at least as close to the measurement
    causes: tuple[str, ...] = ()  # request parts that alone explain a difference
    notes: tuple[str, ...] = ()  # every effective difference of the two requests


def compare_row(*, dataset: Dataset, measured: float, portal: float, ours: float) -> dict[str, Any]:
    """The numbers of a RowComparison; differences are relative to the estimator's figure
    (memory) or in points of the measurement (speed)."""
    gap = abs(portal - ours)
    diff_pct = gap / abs(ours) * 100 if ours else gap / measured * 100
    diff_points = gap / measured * 100
    limit, diff = (
        (MEMORY_TOLERANCE_PCT, diff_pct)
        if dataset.kind == MEMORY
        else (SPEED_TOLERANCE_POINTS, diff_points)
    )
    return {
        "measured": measured,
        "portal": portal,
        "estimator": ours,
        "diff_pct": diff_pct,
        "diff_points": diff_points,
        "differs": diff > limit,
        "portal_closer": abs(portal - measured) <= abs(ours - measured),
    }


@dataclass(frozen=True)
class Errors:
    """Absolute % errors against the measurements (estimator.validate.Metric.summary)."""

    median_pct: float | None
    p90_pct: float | None
    max_pct: float | None
    inside_share: float | None  # speeds: share of measurements inside [low, high]


@dataclass(frozen=True)
class DatasetReport:
    key: str
    source: str
    figure: str
    kind: str
    matched: int
    skipped: int
    skipped_reasons: dict[str, int]
    portal: Errors
    estimator: Errors
    max_diff_pct: float | None  # largest |portal - estimator| / estimator over the rows
    median_diff_points: float | None  # portal median error - estimator median error
    rows: tuple[RowComparison, ...]


@dataclass
class _Tally:
    dataset: Dataset
    portal: validate.Metric = field(init=False)
    estimator: validate.Metric = field(init=False)
    skipped: Counter[str] = field(default_factory=Counter)
    rows: list[RowComparison] = field(default_factory=list)

    def __post_init__(self) -> None:
        d = self.dataset
        self.portal = validate.Metric(d.source, d.figure, validate.Target())
        self.estimator = validate.Metric(d.source, d.figure, validate.Target())

    def add(self, row: RowComparison, portal: Value, ours: Value) -> None:
        self.portal.add(portal[0], row.measured, portal[1], portal[2])
        self.estimator.add(ours[0], row.measured, ours[1], ours[2])
        self.rows.append(row)

    def report(self) -> DatasetReport:
        mine, theirs = self.portal.summary(), self.estimator.summary()
        medians = (mine["median_pct"], theirs["median_pct"])
        return DatasetReport(
            key=self.dataset.key,
            source=self.dataset.source,
            figure=self.dataset.figure,
            kind=self.dataset.kind,
            matched=len(self.rows),
            skipped=sum(self.skipped.values()),
            skipped_reasons=dict(sorted(self.skipped.items())),
            portal=_errors(mine),
            estimator=_errors(theirs),
            max_diff_pct=max((r.diff_pct for r in self.rows), default=None),
            median_diff_points=None if None in medians else medians[0] - medians[1],
            rows=tuple(self.rows),
        )


def _errors(summary: Mapping[str, Any]) -> Errors:
    keys = ("median_pct", "p90_pct", "max_pct", "inside_share")
    return Errors(*(summary[k] for k in keys))


@dataclass(frozen=True)
class ValidationReport:
    datasets: tuple[DatasetReport, ...]

    def differing_rows(self) -> list[RowComparison]:
        return [row for d in self.datasets for row in d.rows if row.differs]

    def strict_failures(self) -> list[str]:
        """Memory rows beyond MEMORY_TOLERANCE_PCT where the page is farther from the
        measurement than the estimator (a measured catalog file that brings the page closer
        is not a fault), and speed medians more than SPEED_TOLERANCE_POINTS apart."""
        memory = {d.key for d in self.datasets if d.kind == MEMORY}
        out = [
            f"{row.dataset} {row.row_id}: the page differs by {row.diff_pct:.2f} %"
            for row in self.differing_rows()
            if row.dataset in memory and not row.portal_closer
        ]
        for d in self.datasets:
            if d.kind == SPEED and abs(d.median_diff_points or 0) > SPEED_TOLERANCE_POINTS:
                out.append(f"{d.key}: median error differs by {d.median_diff_points:.2f} points")
        return out


# --- the run -------------------------------------------------------------------------------


def _replay(case: Case, catalog: CatalogIndex, tallies: Mapping[str, _Tally]) -> None:
    measures = [m for m in case.measures if m.dataset in tallies]
    keys = [m.dataset for m in measures]
    if not measures:
        return
    try:
        ours = estimate(case.request)
    except RequestError as exc:
        _skip(tallies, keys, f"{BY_ESTIMATOR}estimator refused: {exc.field}")
        return
    match = match_case(case=case, catalog=catalog)
    if isinstance(match, str):
        _skip(tallies, keys, match)
        return
    try:
        sized = portal_sizing(match=match)
    except RequestError as exc:
        _skip(tallies, keys, f"the page's request refused: {exc.field}")
        return
    page = result_to_dict(sized.result)
    for measure in measures:
        _tally(tallies[measure.dataset], case, match, measure, (page, ours), sized.request)


def _tally(
    tally: _Tally,
    case: Case,
    match: Match,
    measure: Measure,
    results: tuple[Mapping[str, Any], Mapping[str, Any]],
    request: Request,
) -> None:
    page, ours = (figure_value(result, measure.path) for result in results)
    if ours is None:
        tally.skipped[BY_ESTIMATOR + "no figure (no TFLOPS for the device)"] += 1
        return
    if page is None:
        tally.skipped["the page has no figure (no TFLOPS in the catalog)"] += 1
        return
    numbers = compare_row(
        dataset=tally.dataset, measured=measure.measured, portal=page[0], ours=ours[0]
    )
    why: dict[str, Any] = {}
    if numbers["differs"]:
        theirs = parse_request(case.request)  # estimator.validate's own, accepted above
        why["causes"] = causes(ours=theirs, page=request, path=measure.path, target=ours[0])
        why["notes"] = tuple(
            request_differences(ours=theirs, page=request, match=match, kind=tally.dataset.kind)
        )
    row = RowComparison(
        dataset=tally.dataset.key,
        row_id=case.row_id,
        model=match.model.slug,
        accelerator=match.accelerator.slug,
        gpus=match.setup.gpus,
        **numbers,
        **why,
    )
    tally.add(row, page, ours)


def _skip(tallies: Mapping[str, _Tally], keys: Iterable[str], reason: str) -> None:
    for key in keys:
        if key in tallies:
            tallies[key].skipped[reason] += 1


def portal_validation(*, datasets: Sequence[str] = ()) -> ValidationReport:
    """estimator.validate's rows through the page's code path, one report per data set
    (all of DATASET_KEYS when `datasets` is empty). Raises ValueError for an unknown key."""
    unknown = sorted(set(datasets) - set(DATASET_KEYS))
    if unknown:
        raise ValueError(f"unknown data set(s): {', '.join(unknown)}")
    tallies = {d.key: _Tally(d) for d in DATASETS if not datasets or d.key in datasets}
    catalog = catalog_index()
    for keys, cases in CASE_SOURCES:
        if not tallies.keys() & set(keys):
            continue
        for item in cases():
            if isinstance(item, Case):
                _replay(item, catalog, tallies)
            else:
                _skip(tallies, item.datasets, item.reason)
    return ValidationReport(tuple(t.report() for t in tallies.values()))
