"""The site shell: favicon, header links, the language switch's next=, and the set-up block
`make run` ends with."""

from __future__ import annotations

import os
import stat
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import translation

from tests.cast import CastTestCase

ROOT = Path(__file__).resolve().parents[2]


# --- Favicon ------------------------------------------------------------------------


def test_favicon_files_exist() -> None:
    svg = finders.find("favicon.svg")
    assert svg is not None
    assert Path(str(svg)).read_text().startswith("<svg")
    ico = ROOT / "static" / "root" / "favicon.ico"
    # An ICO header: reserved 0, type 1 (icon), then the number of images (16, 32, 48 px).
    assert ico.read_bytes()[:6] == b"\x00\x00\x01\x00\x03\x00"


@pytest.mark.django_db
def test_favicon_ico_is_served_at_the_root(client: Client) -> None:
    # Clients that do not read <link rel="icon"> (admin pages, feeds) ask /favicon.ico.
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] in {"image/x-icon", "image/vnd.microsoft.icon"}
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    assert body == (ROOT / "static" / "root" / "favicon.ico").read_bytes()


class Shell(CastTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def test_every_page_links_the_favicon(self) -> None:
        html = self.client.get(reverse("login")).content.decode()
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html

    def test_header_links_to_the_sizing_views_and_the_catalog(self) -> None:
        self.client.force_login(self.alice)
        html = self.client.get(reverse("tenancy:dashboard", args=["org-a"])).content.decode()
        for url in (
            reverse("catalog:model-list"),
            reverse("catalog:accelerator-list"),
            reverse("explore:compare"),
            reverse("pricing:prices"),
        ):
            assert f'<a href="{url}">' in html, url
        # The header's search box goes to the search page.
        assert f'action="{reverse("explore:search")}" role="search"' in html
        # The organization's pages, in their own navigation under the header.
        assert 'aria-label="Organization"' in html
        assert f'href="{reverse("reports:list", args=["org-a"])}"' in html
        # The phone menu's button controls the menu it folds.
        assert 'aria-controls="topbar-menu" aria-expanded="false"' in html
        assert 'id="topbar-menu"' in html

    def test_language_form_next_carries_the_query(self) -> None:
        self.client.force_login(self.alice)
        html = self.client.get(reverse("catalog:model-list"), {"q": "llama", "page": "2"})
        # The server writes the address with its query; site.js replaces it at submit
        # with the address bar's (which HTMX swaps move on).
        assert (
            '<input name="next" type="hidden" value="/en/models/?q=llama&amp;page=2">'
            in html.content.decode()
        )

    def test_switching_language_keeps_the_path_and_query(self) -> None:
        self.client.force_login(self.alice)
        # What the browser posts after an HTMX swap pushed ?gpus=2&ctx=12288.
        response = self.client.post(
            "/i18n/setlang/",
            {"language": "de", "next": "/en/models/x-model/on/y-card/?gpus=2&ctx=12288"},
        )
        assert response.status_code == 302
        assert response["Location"] == "/de/models/x-model/on/y-card/?gpus=2&ctx=12288"

    def test_switching_works_when_the_cookie_names_another_language(self) -> None:
        # A colleague's /en/ link opened with a German cookie: the page is English (the
        # prefix wins), and "Deutsch" must lead to /de/, not back to /en/.
        self.client.force_login(self.alice)
        self.client.cookies[settings.LANGUAGE_COOKIE_NAME] = "de"
        for language, expected in (("de", "/de/models/?q=qwen"), ("it", "/it/models/?q=qwen")):
            response = self.client.post(
                "/i18n/setlang/", {"language": language, "next": "/en/models/?q=qwen"}
            )
            assert response.status_code == 302
            assert response["Location"] == expected
            assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == language
            self.client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"


def test_site_js_sets_next_from_the_address_bar() -> None:
    js = (ROOT / "static" / "js" / "site.js").read_text()
    assert "window.location.pathname + window.location.search" in js
    assert 'querySelectorAll("form.langs")' in js


# --- The set-up block ---------------------------------------------------------------


def seed(*args: str) -> str:
    out = StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_setup_block_shows_url_logins_and_the_staff_password(tmp_path: Path) -> None:
    password_file = tmp_path / "var" / "staff-password.txt"
    args = ("--url", "http://127.0.0.1:8000/", "--password-file", str(password_file))
    first = seed(*args)
    password = password_file.read_text().strip()
    assert len(password) >= 16  # token_urlsafe(12): 16 characters
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert User.objects.get(username="admin").check_password(password)
    lines = first.strip().splitlines()
    # Framed by two rules of "=", the last lines of the output.
    assert set(lines[0]) == {"="} and lines[-1] == lines[0]
    assert lines[1:-1] == [
        "Rightsize is ready at http://127.0.0.1:8000/",
        "Demo login:  demo / demo  (admin of the organization Demo)",
        f"Staff login: admin / {password}  (also in {password_file})",
        "Django admin: http://127.0.0.1:8000/admin/",
    ]
    # A second run creates nothing and shows the same password, read from the file.
    second = seed(*args)
    assert f"Staff login: admin / {password}  (also in {password_file})" in second
    assert User.objects.filter(username="admin").count() == 1


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_setup_block_without_a_known_password_says_how_to_set_one(tmp_path: Path) -> None:
    seed()  # the admin exists; its password was shown once and not kept
    block = seed("--url", "http://127.0.0.1:8000/", "--password-file", str(tmp_path / "pw"))
    assert "Staff login: admin (password set earlier and not kept" in block
    assert "manage.py changepassword admin" in block
    # A file whose password is no longer the admin's is not shown either.
    (tmp_path / "pw").write_text("stale-password\n")
    block = seed("--url", "http://127.0.0.1:8000/", "--password-file", str(tmp_path / "pw"))
    assert "stale-password" not in block


def test_make_run_ends_with_the_setup_block_after_the_loader() -> None:
    """`make -n run`: the catalog loader, then seed_demo with the address (the block), then
    the server; loader warnings come before the block, never after it."""
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS"}}
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "run", "HOST=127.0.0.1", "PORT=8123"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    commands = [line for line in done.stdout.splitlines() if "manage.py" in line]
    steps = [c.split("manage.py", 1)[1].split()[0] for c in commands]
    assert steps[-4:] == ["migrate", "load_catalog", "seed_demo", "runserver"], steps
    seed_line = commands[-2]
    assert "--url http://127.0.0.1:8123/" in seed_line
    assert "--password-file var/staff-password.txt" in seed_line
