"""Refresh every enabled price source (or those of one kind) now, in this process."""

from __future__ import annotations

import contextlib
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pricing import selectors, services
from pricing.fetchers.base import TransientFetchError
from pricing.models import RunStatus, SourceKind


class Command(BaseCommand):
    help = "Fetch prices from every enabled source (or one kind) and print each run's counts."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kind", choices=SourceKind.values, default="")

    def handle(self, *args: Any, **options: Any) -> None:
        sources = list(selectors.price_sources_enabled(kind=options["kind"]))
        if not sources:
            self.stdout.write(
                "no enabled price source"
                + (f" of kind {options['kind']}" if options["kind"] else "")
            )
            return
        reclaimed = services.refresh_runs_reclaim()
        if reclaimed:
            self.stdout.write(f"marked {reclaimed} abandoned run(s) as failed")
        failed = 0
        for source in sources:
            run = services.refresh_run_queue(source=source)
            # A transient failure is recorded on the run; the schedule will try again.
            with contextlib.suppress(TransientFetchError):
                services.price_source_refresh(source_id=source.pk, run_id=run.pk)
            run.refresh_from_db()
            failed += run.status == RunStatus.FAILED
            c = run.summary()
            self.stdout.write(
                f"{source}: {run.status}; seen {c['seen']}, created {c['created']}, "
                f"updated {c['updated']}, unchanged {c['unchanged']}, snapshots {c['snapshots']}, "
                f"unmatched {c['unmatched']}, skipped rows {c['skipped']}"
                + (f"; error: {run.error}" if run.error else "")
            )
        if failed == len(sources):
            raise CommandError("every source failed")
