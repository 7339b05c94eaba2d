"""Send core.ping through the broker and wait for a worker's answer: a deploy smoke test."""

from __future__ import annotations

from typing import Any

from celery.exceptions import TimeoutError as CeleryTimeoutError
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sizing_site.core.tasks import ping


class Command(BaseCommand):
    help = "Round-trip core.ping through the Celery broker; fails when no worker answers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait")

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            raise CommandError("REDIS_URL is not set: tasks run in-process, no worker to ping")
        try:
            answer = ping.delay().get(timeout=options["timeout"])
        except CeleryTimeoutError:
            raise CommandError(f"no worker answered within {options['timeout']:g} s") from None
        self.stdout.write(f"worker answered: {answer}")
