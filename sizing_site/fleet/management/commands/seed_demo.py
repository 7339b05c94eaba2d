"""Create the demo organization and logins; safe to run any number of times.

Only for development: a well-known demo/demo admin login on a production instance is an
open door. With DEBUG=False it does nothing unless asked explicitly (`--allow-production`
or SEED_DEMO=True in the environment).

`make run` calls it last, after the catalog loader, with `--url` and `--password-file`: it
then ends with the set-up block (the address, the demo login, the staff login and its
password, also kept in the file for the next run), so no loader output buries it.
"""

from __future__ import annotations

import os
import secrets
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from catalog.models import Accelerator, LLMModel
from catalog.services.configs import model_apply_config
from sizing_site.env import env_bool
from sizing_site.fleet.models import Interconnect, InventoryMachine
from sizing_site.tenancy.models import Membership, Organization, Role

# The demo org's one inventory machine (its fleet page shows rows), with a fixed code so
# the browser walk can open its edit, delete and history pages.
DEMO_MACHINE_CODE = uuid.UUID("5eed0000-f1ee-4000-8000-000000000001")
DEMO_MACHINE_CARD = "nvidia-geforce-rtx-4090"
# The demo org's own catalog entries: a fine-tune of a public model (its
# config.json) and an in-house card (a public card's figures under the org's name).
DEMO_OWN_MODEL = "demo-support-assistant-8b"
DEMO_OWN_MODEL_BASE = "llama-3-1-8b-instruct"
DEMO_OWN_CARD = "demo-lab-rtx-4090"


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
        parser.add_argument(
            "--password-file",
            type=Path,
            help="Write the new staff password to this file (owner-only), and show it from "
            "there on later runs while it is still the password.",
        )
        parser.add_argument(
            "--url",
            help="End with the set-up block: this address, the demo and the staff logins.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        allowed = settings.DEBUG or options["allow_production"] or env_bool("SEED_DEMO", False)
        if not allowed:
            self.stdout.write(
                "DEBUG is False: no demo data created "
                "(use --allow-production or SEED_DEMO=True to seed anyway)."
            )
            return
        User = get_user_model()
        existed = User._default_manager.filter(username="admin").exists()
        password_file: Path | None = options["password_file"]
        password = self._seed(password_file)
        if options["url"]:
            self.stdout.write(setup_block(options["url"], password, password_file))
            return
        self.stdout.write("Demo login: demo / demo (admin of org 'Demo')")
        if existed:
            self.stdout.write("Staff login: admin (exists; password unchanged)")
        else:
            self.stdout.write(f"Staff login: admin / {password} (new; shown once)")

    @transaction.atomic
    def _seed(self, password_file: Path | None = None) -> str | None:
        """Seed; the staff password when known (new now, or still the one in the file)."""
        User = get_user_model()
        org, _created = Organization.objects.get_or_create(slug="demo", defaults={"name": "Demo"})
        demo, created = User._default_manager.get_or_create(username="demo")
        if created:
            demo.set_password("demo")
            demo.save()
        Membership.all_tenants.get_or_create(
            user=demo, organization=org, defaults={"role": Role.ADMIN}
        )
        card = Accelerator.objects.filter(slug=DEMO_MACHINE_CARD).first()
        if card is not None:  # the catalog is loaded
            InventoryMachine.all_tenants.get_or_create(
                code=DEMO_MACHINE_CODE,
                defaults={
                    "organization": org,
                    "name": "Workstation (2 × RTX 4090)",
                    "accelerator": card,
                    "card_count": 2,
                    "interconnect": Interconnect.PCIE,
                    "created_by": demo,
                },
            )
        _seed_own_entries(org)
        admin = User._default_manager.filter(username="admin").first()
        if admin is not None:
            return _known_password(admin, password_file)
        password = secrets.token_urlsafe(12)
        User._default_manager.create_superuser(
            username="admin", email="admin@example.invalid", password=password
        )
        if password_file is not None:
            _write_private(password_file, password)
        return password


def _seed_own_entries(org: Organization) -> None:
    """The demo org's own model and card, when the public rows they copy are loaded."""
    base = LLMModel.objects.filter(slug=DEMO_OWN_MODEL_BASE).first()
    if base is not None and not LLMModel.all_orgs.filter(slug=DEMO_OWN_MODEL).exists():
        model = LLMModel(
            organization=org,
            name="Support assistant 8B (Llama 3.1 fine-tune)",
            slug=DEMO_OWN_MODEL,
            family=base.family,
            hf_repo=base.hf_repo,
            notes="Demo entry: a LoRA-merged fine-tune keeps its base model's config.json.",
            sources={"config": f"config.json of {base.hf_repo} (the base model)"},
        )
        model_apply_config(model=model, config=base.config)
        model.save()
    card = Accelerator.objects.filter(slug=DEMO_MACHINE_CARD).first()
    if card is not None and not Accelerator.all_orgs.filter(slug=DEMO_OWN_CARD).exists():
        card.pk = None
        card._state.adding = True
        card.slug, card.organization, card.curated = DEMO_OWN_CARD, org, False
        card.name = "Lab RTX 4090 (in-house)"
        card.notes = "Demo entry: the public RTX 4090's figures, with their sources."
        card.save()


def _write_private(path: Path, password: str) -> None:
    """The password alone on one line, readable by the owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(password + "\n")
    path.chmod(0o600)


def _known_password(admin: Any, password_file: Path | None) -> str | None:
    """The password kept in the file, if the staff login still has it."""
    if password_file is None or not password_file.is_file():
        return None
    kept = password_file.read_text(encoding="utf-8").strip()
    return kept if kept and admin.check_password(kept) else None


def setup_block(url: str, password: str | None, password_file: Path | None) -> str:
    """The lines `make run` ends with, framed so they stand out from the loader's output."""
    if password is None:
        staff = (
            "admin (password set earlier and not kept; set a new one with "
            "`.venv/bin/python manage.py changepassword admin`)"
        )
    elif password_file is not None:
        staff = f"admin / {password}  (also in {password_file})"
    else:
        staff = f"admin / {password}"
    admin_url = url.rstrip("/") + "/admin/"
    lines = [
        f"Rightsize is ready at {url}",
        "Demo login:  demo / demo  (admin of the organization Demo)",
        f"Staff login: {staff}",
        f"Django admin: {admin_url}",
    ]
    rule = "=" * max(len(line) for line in lines)
    return "\n".join(["", rule, *lines, rule, ""])
