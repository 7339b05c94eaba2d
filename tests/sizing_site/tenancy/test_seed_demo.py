"""The demo org and its demo/demo admin exist only in development or when asked for."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.test import override_settings

from sizing_site.tenancy.models import Membership, Organization, Role

ROOT = Path(__file__).resolve().parents[3]
REFUSAL = "DEBUG is False: no demo data created"


def seed(*args: str) -> str:
    out = StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


@pytest.fixture(autouse=True)
def _no_seed_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEED_DEMO", raising=False)


@pytest.mark.django_db
@override_settings(DEBUG=False)
def test_with_debug_off_and_no_flag_it_creates_nothing() -> None:
    assert REFUSAL in seed()
    assert not User.objects.filter(username__in=["demo", "admin"]).exists()
    assert not Organization.objects.filter(slug="demo").exists()


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_in_development_it_seeds_once_however_often_it_runs() -> None:
    first, second = seed(), seed()
    assert "Demo login: demo / demo" in first
    assert "admin / " in first
    assert "exists; password unchanged" in second
    demo = User.objects.get(username="demo")
    assert demo.check_password("demo")
    membership = Membership.objects.for_user(demo).get()
    assert (membership.organization.slug, membership.role) == ("demo", Role.ADMIN)
    assert User.objects.get(username="admin").is_superuser


@pytest.mark.django_db
@override_settings(DEBUG=False)
def test_production_seeds_only_when_asked_explicitly(monkeypatch: pytest.MonkeyPatch) -> None:
    assert REFUSAL not in seed("--allow-production")
    assert User.objects.filter(username="demo").count() == 1
    User.objects.all().delete()
    monkeypatch.setenv("SEED_DEMO", "True")
    assert REFUSAL not in seed()
    assert User.objects.filter(username="demo").count() == 1


@pytest.mark.django_db
@override_settings(DEBUG=False)
def test_a_misspelt_flag_stops_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEED_DEMO", "yes")
    with pytest.raises(ImproperlyConfigured, match="SEED_DEMO"):
        seed()


def test_after_the_production_start_no_demo_user_exists(tmp_path: Path) -> None:
    """`make serve-prep` steps (migrate, seed_demo) in a fresh process with DEBUG=False."""
    database = tmp_path / "prod.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "SEED_DEMO"}}
    env |= {
        "DEBUG": "False",
        "SECRET_KEY": "test-only-not-a-secret",
        "DATABASE_URL": f"sqlite:///{database}",
    }
    manage = [sys.executable, "manage.py"]
    for command in (["migrate", "--noinput"], ["seed_demo"]):
        done = subprocess.run(
            manage + command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
    assert REFUSAL in done.stdout
    with sqlite3.connect(database) as db:
        users = db.execute("SELECT count(*) FROM auth_user").fetchone()[0]
        orgs = db.execute("SELECT count(*) FROM tenancy_organization").fetchone()[0]
    assert (users, orgs) == (0, 0)
