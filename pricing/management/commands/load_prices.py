"""Load pricing/data/ (providers, one source per kind, transcribed offers); idempotent."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from pricing.services import pricing_seed_load


class Command(BaseCommand):
    help = "Upsert the pricing seed data: providers, price sources and transcribed offers."

    def handle(self, *args: Any, **options: Any) -> None:
        result = pricing_seed_load()
        c = result.offers
        for reason in result.skipped:
            self.stderr.write(f"skipped offer {reason}")
        self.stdout.write(
            f"prices: providers created {result.providers_created}, sources created "
            f"{result.sources_created}, offers created {c.created}, updated {c.updated}, "
            f"unchanged {c.unchanged}, snapshots added {c.snapshots}, without an accelerator "
            f"{c.unmatched}"
        )
