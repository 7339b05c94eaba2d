"""Accuracy through the catalog: estimator.validate's published rows, sized by the page path."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.translation import gettext as _

from catalog.validation import (
    DATASET_KEYS,
    MEMORY_TOLERANCE_PCT,
    SPEED_TOLERANCE_POINTS,
    DatasetReport,
    ValidationReport,
    portal_validation,
)


class Command(BaseCommand):
    help = _(
        "Replay the published measurements of estimator.validate through the catalog rows and "
        "the configurator's code path, side by side with the estimator fed ideal inputs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help=_("print the report as JSON"))
        parser.add_argument(
            "--dataset",
            action="append",
            default=[],
            metavar="NAME",
            help=_("only this data set (repeatable): %(choices)s")
            % {"choices": ", ".join(DATASET_KEYS)},
        )
        parser.add_argument(
            "--rows", action="store_true", help=_("list the rows where portal and estimator differ")
        )
        parser.add_argument(
            "--strict",
            action="store_true",
            help=_("exit 1 when a memory figure or a speed median differs beyond tolerance"),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        unknown = sorted(set(options["dataset"]) - set(DATASET_KEYS))
        if unknown:
            raise CommandError(
                _("Unknown data set %(names)s; choose from: %(choices)s")
                % {"names": ", ".join(unknown), "choices": ", ".join(DATASET_KEYS)}
            )
        report = portal_validation(datasets=options["dataset"])
        if options["json"]:
            self.stdout.write(json.dumps(as_json(report), indent=2))
        else:
            for line in table(report, rows=options["rows"]):
                self.stdout.write(line)
        failures = report.strict_failures()
        if options["strict"] and failures:
            raise CommandError(
                _("%(count)d figures differ beyond tolerance") % {"count": len(failures)}
            )


def as_json(report: ValidationReport) -> dict[str, Any]:
    return {
        "tolerances": {"memory_pct": MEMORY_TOLERANCE_PCT, "speed_points": SPEED_TOLERANCE_POINTS},
        "datasets": [{k: v for k, v in asdict(d).items() if k != "rows"} for d in report.datasets],
        "differences": [asdict(row) for row in report.differing_rows()],
        "strict_failures": report.strict_failures(),
    }


def _fmt(value: float | None, pattern: str = "{:.2f}") -> str:
    return "-" if value is None else pattern.format(value)


def _line(d: DatasetReport) -> str:
    return (
        f"{d.key:<17} {d.figure:<34} {d.matched:>4} {d.skipped:>4} "
        f"{_fmt(d.portal.median_pct):>7} {_fmt(d.portal.p90_pct):>7} "
        f"{_fmt(d.estimator.median_pct):>7} {_fmt(d.estimator.p90_pct):>7} "
        f"{_fmt(d.portal.inside_share, '{:.0%}'):>6} {_fmt(d.estimator.inside_share, '{:.0%}'):>6} "
        f"{_fmt(d.max_diff_pct):>8}"
    )


def table(report: ValidationReport, *, rows: bool) -> Iterator[str]:
    yield (
        f"{'data set':<17} {'figure':<34} {'n':>4} {'skip':>4} {'p med%':>7} {'p p90%':>7} "
        f"{'e med%':>7} {'e p90%':>7} {'p in':>6} {'e in':>6} {'max p/e%':>8}"
    )
    yield from (_line(d) for d in report.datasets)
    yield ""
    yield "p = portal (catalog rows, configurator path); e = estimator.validate's request"
    for d in report.datasets:
        reasons = "; ".join(f"{reason} {n}" for reason, n in d.skipped_reasons.items())
        yield f"skipped {d.key}: {reasons or '-'}"
    if rows:
        yield from _row_lines(report)


def _row_lines(report: ValidationReport) -> Iterator[str]:
    yield ""
    yield (
        f"rows differing by > {MEMORY_TOLERANCE_PCT} % (memory) "
        f"or > {SPEED_TOLERANCE_POINTS} points (speed):"
    )
    for row in report.differing_rows():
        closer = "; the page is closer to the measurement" if row.portal_closer else ""
        yield (
            f"{row.dataset} {row.row_id} {row.model} on {row.gpus}x {row.accelerator}: "
            f"portal {row.portal:,.6g} vs estimator {row.estimator:,.6g} "
            f"(measured {row.measured:,.6g}; {row.diff_pct:.2f} %, {row.diff_points:.2f} points"
            f"{closer})"
        )
        yield "    explained by: " + (", ".join(row.causes) or "no single request part")
        for note in row.notes:
            yield f"    {note}"
