"""Create the demo organization and logins; safe to run any number of times.

Only for development: a well-known demo/demo admin login on a production instance is an
open door. With DEBUG=False it does nothing unless asked explicitly (`--allow-production`
or SEED_DEMO=True in the environment).
"""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from sizing_site.env import env_bool
from sizing_site.tenancy.models import Membership, Organization, Role


class Command(BaseCommand):
    help = (
        "Create org 'Demo', user demo/demo (its admin) and a staff superuser 'admin'. "
        "Only with DEBUG=True, --allow-production or SEED_DEMO=True."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--allow-production",
            action="store_true",
            help="Seed even with DEBUG=False (a demo/demo admin login: never on a real site).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        allowed = settings.DEBUG or options["allow_production"] or env_bool("SEED_DEMO", False)
        if not allowed:
            self.stdout.write(
                "DEBUG is False: no demo data created "
                "(use --allow-production or SEED_DEMO=True to seed anyway)."
            )
            return
        self._seed()

    @transaction.atomic
    def _seed(self) -> None:
        User = get_user_model()
        org, _created = Organization.objects.get_or_create(slug="demo", defaults={"name": "Demo"})
        demo, created = User._default_manager.get_or_create(username="demo")
        if created:
            demo.set_password("demo")
            demo.save()
        Membership.all_tenants.get_or_create(
            user=demo, organization=org, defaults={"role": Role.ADMIN}
        )
        self.stdout.write("Demo login: demo / demo (admin of org 'Demo')")
        if User._default_manager.filter(username="admin").exists():
            self.stdout.write("Staff login: admin (exists; password unchanged)")
            return
        password = secrets.token_urlsafe(12)
        User._default_manager.create_superuser(
            username="admin", email="admin@example.invalid", password=password
        )
        self.stdout.write(f"Staff login: admin / {password} (new; shown once)")
