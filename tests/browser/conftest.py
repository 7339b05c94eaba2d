"""Real-browser tests: Playwright for Python driving the distribution's Chromium against a
real server process.

The package starts one server (`manage.py runserver --noreload` on a free loopback port)
on its own freshly prepared database: `migrate`, `load_catalog`, `seed_demo` (which writes
the staff password to a file the staff pages' tests read). With DATABASE_URL on
PostgreSQL that is a separate database (<name>_browser, or <name>_browser_gw0 on the
pytest-xdist worker that runs them, dropped afterwards), otherwise a temporary SQLite file.
In a parallel run (`make pytest`) one worker takes the whole package (tests/conftest.py
groups it), so the server is prepared once. The server runs without REDIS_URL, so Celery
tasks run in-process and the cache is local to it.

Chromium is Debian's headless shell, /usr/bin/chromium-headless-shell (`make setup` installs
it with apt-get; half the CPU of the full browser headless). Playwright's own browser
download is never used. The tests are skipped only when that Chromium is missing
and cannot be installed.

Playwright's sync API keeps an asyncio loop in the main thread while it runs, and Django
refuses ORM calls while a loop runs: the browser lives for this package only (scope
"package"), so the tests that come after it are not affected. Nothing here touches the
test database.

A failing test leaves a screenshot and the page's address under var/browser-artifacts/
(which .ci/run prints), and the server's log is kept there too.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    Playwright,
    sync_playwright,
)
from playwright.sync_api import Request as PwRequest
from playwright.sync_api import Response as PwResponse

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium-headless-shell")
CHROMIUM_PACKAGE = "chromium-headless-shell"
ARTIFACTS = ROOT / "var" / "browser-artifacts"
AXE = ROOT / "static" / "vendor" / "axe-core" / "axe.min.js"

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1366, "height": 900}

# The seed data the journeys and the walk use: a model with its config.json and cards with
# a price and cloud offers in catalog/data and pricing/data.
MODEL = "llama-3-1-8b-instruct"
CARD = "nvidia-geforce-rtx-4090"
MOE_MODEL = "qwen3-30b-a3b"
CARD_2 = "nvidia-geforce-rtx-3090"
ORG = "demo"
CONFIGURE = f"/en/models/{MODEL}/on/{CARD}/"

# Variables of the caller's environment that must not reach the server: it runs the
# development settings on its own database, without Redis (no worker would run its tasks).
_SERVER_ENV_DROP = {
    "REDIS_URL",
    "DATABASE_URL",
    "ALLOWED_HOSTS",
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "SEED_DEMO",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test in this folder is a browser test (`-m "not browser"` leaves them out)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the item, for the screenshot-on-failure fixture."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


# --- Chromium -------------------------------------------------------------------------


def _install_chromium() -> str:
    """apt-get install CHROMIUM_PACKAGE if we may (root, apt-get present); why not otherwise."""
    if shutil.which("apt-get") is None:
        return "no apt-get on this machine"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return "not root, so apt-get cannot install it (run `make setup` as root)"
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", CHROMIUM_PACKAGE],
    ):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(command)} failed: {exc}"
        if done.returncode != 0:
            return f"{' '.join(command)} failed: {done.stderr.strip()[-300:]}"
    return ""


@pytest.fixture(scope="package")
def chromium() -> Path:
    if not CHROMIUM.exists():
        why = _install_chromium()
        if not CHROMIUM.exists():
            pytest.skip(f"{CHROMIUM} is missing and could not be installed: {why}")
    return CHROMIUM


# --- The server -----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _own_database(tmp: Path) -> tuple[str, Callable[[], None]]:
    """A database for the server alone, and how to remove it."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return f"sqlite:///{tmp / 'browser.sqlite3'}", lambda: None
    import psycopg  # only with PostgreSQL
    from psycopg import sql

    parts = urlsplit(url)
    name = (parts.path.lstrip("/") or "rightsize") + "_browser"
    # Under pytest-xdist, the worker's name too (<name>_browser_gw0), as pytest-django
    # names the test databases: two runs' workers never share one.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        name += f"_{worker}"
    maintenance = urlunsplit(parts._replace(path="/postgres", query=""))
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))

    def run(statement: sql.Composed) -> None:
        with psycopg.connect(maintenance, autocommit=True) as conn:
            conn.execute(statement)

    run(drop)
    run(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return urlunsplit(parts._replace(path=f"/{name}")), lambda: run(drop)


@dataclass(frozen=True)
class Server:
    url: str  # http://127.0.0.1:PORT, no trailing slash
    staff_password: str
    prepare_s: float  # how long migrate + load_catalog + seed_demo took

    def at(self, path: str) -> str:
        return self.url + path


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server stopped at start-up:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/health/live/", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    raise RuntimeError(f"the server did not answer within 90 s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="package")
def server(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("browser-server")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    database_url, drop_database = _own_database(tmp)
    env = {k: v for k, v in os.environ.items() if k not in _SERVER_ENV_DROP}
    env |= {
        "DATABASE_URL": database_url,
        "DEBUG": "True",
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": "sizing_site.settings",
    }
    password_file = tmp / "staff-password.txt"
    manage = [sys.executable, "manage.py"]
    started = time.monotonic()
    for command in (
        ["migrate", "--noinput"],
        ["load_catalog"],
        ["seed_demo", "--password-file", str(password_file)],
    ):
        done = subprocess.run(
            manage + command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"manage.py {' '.join(command)}:\n{done.stderr[-3000:]}"
    prepare_s = time.monotonic() - started
    port = _free_port()
    log = ARTIFACTS / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process, log)
        yield Server(url, password_file.read_text().strip(), prepare_s)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        drop_database()


# --- The browser ----------------------------------------------------------------------


@pytest.fixture(scope="package")
def playwright(chromium: Path) -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="package")
def browser(playwright: Playwright, chromium: Path) -> Iterator[Browser]:
    browser = playwright.chromium.launch(
        executable_path=str(chromium),
        # --no-sandbox: CI runs as root in a container, where Chromium's sandbox cannot start.
        args=["--no-sandbox", "--disable-dev-shm-usage"],
    )
    yield browser
    browser.close()


def log_in(page: Page, server: Server, username: str = "demo", password: str = "demo") -> None:
    page.goto(server.at("/en/accounts/login/"))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.locator("main form button[type=submit]").click()
    # (Waiting for the address, not for "a navigation": htmx's pushState counts as one.)
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


@pytest.fixture(scope="package")
def demo_state(browser: Browser, server: Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Cookies of a demo/demo session, for contexts that start logged in."""
    path = tmp_path_factory.mktemp("browser-state") / "demo.json"
    context = browser.new_context()
    log_in(context.new_page(), server)
    context.storage_state(path=str(path))
    context.close()
    return path


@pytest.fixture(scope="package")
def staff_state(browser: Browser, server: Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Cookies of the staff login seed_demo made (its password came in the file)."""
    path = tmp_path_factory.mktemp("browser-state") / "staff.json"
    context = browser.new_context()
    log_in(context.new_page(), server, "admin", server.staff_password)
    context.storage_state(path=str(path))
    context.close()
    return path


# --- Saved configurations and share links, made through the pages ---------------------


def save_configuration(page: Page, server: Server, name: str, query: str = "") -> str:
    """Save the configurator's configuration under `name`; the report's path."""
    page.goto(server.at(CONFIGURE + query), wait_until="networkidle")
    form = page.locator("form#save-configuration")
    form.locator("input[name=name]").fill(name)
    form.locator("button[type=submit]").first.click()
    page.wait_for_url(re.compile(rf"/en/o/{ORG}/reports/[0-9a-f-]{{36}}/$"))
    return urlsplit(page.url).path


def create_share_link(page: Page, server: Server, report: str) -> str:
    """Create a share link for the report at `report`; the shared page's path."""
    page.goto(server.at(report))
    page.locator('form[action$="/share/"] button[type=submit]').click()
    # The links page, rendered by the POST itself: the address is shown this once.
    page.wait_for_url(re.compile(rf"/en/o/{ORG}/reports/[0-9a-f-]{{36}}/share/$"))
    link = page.locator('main a[href*="/r/"]').first
    href = link.get_attribute("href")
    assert href and "/r/" in href, page.url
    return urlsplit(href).path


def save_plan(page: Page, server: Server) -> tuple[str, str]:
    """Save a capacity plan from the planner page and share it; the saved plan's report
    path and its public page's path."""
    page.goto(server.at(f"/en/o/{ORG}/planner/?model={MODEL}&users=50"), wait_until="networkidle")
    form = page.locator("form#save-plan")
    form.locator("input[name=name]").fill("Walk: 50 users of Llama 3.1 8B")
    form.locator("button[type=submit]").first.click()
    page.wait_for_url(re.compile(rf"/en/o/{ORG}/planner/saved/[0-9a-f-]{{36}}/$"))
    report = urlsplit(page.url).path
    page.locator('form[action$="/share/"] button[type=submit]').click()
    # The report, rendered by the POST itself: the address is shown this once.
    page.wait_for_url(re.compile(rf"/en/o/{ORG}/planner/saved/[0-9a-f-]{{36}}/share/$"))
    href = page.locator('main a[href*="/s/plan/"]').first.get_attribute("href")
    assert href and "/s/plan/" in href, page.url
    return report, urlsplit(href).path


@dataclass(frozen=True)
class Saved:
    report: str  # /en/o/demo/reports/<code>/
    other: str  # a second saved configuration's report
    shared: str  # /r/<token>/ (no language prefix: each reader gets their own)
    plan: str  # /en/o/demo/planner/saved/<code>/
    shared_plan: str  # /s/plan/<token>/

    @property
    def codes(self) -> tuple[str, str]:
        return self.report.rstrip("/").rsplit("/", 1)[1], self.other.rstrip("/").rsplit("/", 1)[1]


@pytest.fixture(scope="package")
def saved(browser: Browser, server: Server, demo_state: Path) -> Saved:
    """Two saved configurations and a share link of the first, and a saved capacity plan
    with its share link, for the pages that show them."""
    context = browser.new_context(storage_state=str(demo_state))
    page = context.new_page()
    report = save_configuration(page, server, "Walk: Llama 3.1 8B on 2 x RTX 4090", "?gpus=2")
    other = save_configuration(page, server, "Walk: Llama 3.1 8B on one RTX 4090", "?ctx=32768")
    shared = create_share_link(page, server, report)
    plan, shared_plan = save_plan(page, server)
    context.close()
    return Saved(report, other, shared, plan, shared_plan)


# --- What a page did wrong ------------------------------------------------------------


# htmx's console errors for a request a navigation aborted (a suggestion list still loading
# at a submit); the request itself is watched (_failed, _response).
HTMX_ABORT_LOGS = ("htmx:sendAbort", "htmx:afterRequest")


@dataclass
class Watch:
    """Console errors, uncaught exceptions, failed requests and error answers of a page."""

    allow_status: set[int] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)

    in_flight: int = 0

    def attach(self, page: Page) -> Watch:
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.problems.append(f"uncaught: {exc}"))
        page.on("request", self._started)
        page.on("requestfinished", self._finished)
        page.on("requestfailed", self._failed)
        page.on("response", self._response)
        return self

    def _started(self, request: PwRequest) -> None:
        self.in_flight += 1

    def _finished(self, request: PwRequest) -> None:
        self.in_flight = max(0, self.in_flight - 1)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type != "error" or message.text.startswith(HTMX_ABORT_LOGS):
            return
        status = re.search(r"status of (\d{3})", message.text)
        if status and int(status.group(1)) in self.allow_status:
            return  # Chromium's note about an answer the test expects (a form's 400)
        self.problems.append(f"console error: {message.text} ({message.location})")

    def _failed(self, request: PwRequest) -> None:
        self._finished(request)
        failure = request.failure or "?"
        # A navigation that replaced a pending request is not a failure of the page.
        if "ERR_ABORTED" not in failure:
            self.problems.append(f"request failed: {request.method} {request.url} ({failure})")

    def _response(self, response: PwResponse) -> None:
        if response.status >= 400 and response.status not in self.allow_status:
            self.problems.append(
                f"HTTP {response.status}: {response.request.method} {response.url}"
            )

    def clear(self) -> None:
        self.problems.clear()


def _artifact_name(nodeid: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in nodeid.split("::", 1)[-1])
    return keep[:150]


@pytest.fixture(scope="package")
def shared_contexts(browser: Browser, server: Server) -> Iterator[dict[object, BrowserContext]]:
    """Browser contexts the walk reuses, one per login and viewport: the static files
    stay in their cache, as they would for a visitor going from page to page."""
    contexts: dict[object, BrowserContext] = {}
    yield contexts
    for context in contexts.values():
        context.close()


# The new_page fixture's type, for the tests that take it.
NewPage = Callable[..., tuple[Page, Watch]]


@pytest.fixture
def new_page(
    browser: Browser,
    server: Server,
    shared_contexts: dict[object, BrowserContext],
    request: pytest.FixtureRequest,
) -> Iterator[NewPage]:
    """new_page(viewport=..., state=..., allow_status=..., shared=False) -> (page, watch).
    A fresh browser context each time, or with shared=True one reused across tests for
    the same login and viewport (never for a test that logs in or out). On failure each
    page is saved as a screenshot, with its address, under var/browser-artifacts/."""
    pages: list[tuple[BrowserContext, Page, bool]] = []

    def make(
        viewport: dict[str, int] | None = None,
        state: Path | None = None,
        allow_status: set[int] | None = None,
        shared: bool = False,
    ) -> tuple[Page, Watch]:
        size = viewport or DESKTOP
        key = (size["width"], size["height"], str(state))
        context = shared_contexts.get(key) if shared else None
        if context is None:
            context = browser.new_context(
                viewport=size,  # type: ignore[arg-type]
                storage_state=str(state) if state else None,
                base_url=server.url,
            )
            context.set_default_timeout(20_000)
            if shared:
                shared_contexts[key] = context
        page = context.new_page()
        pages.append((context, page, shared))
        return page, Watch(allow_status=allow_status or set()).attach(page)

    yield make
    failed = any(
        getattr(request.node, f"rep_{when}", None) is not None
        and getattr(request.node, f"rep_{when}").failed
        for when in ("setup", "call")
    )
    for n, (context, page, shared) in enumerate(pages):
        if failed:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            stem = ARTIFACTS / f"{_artifact_name(request.node.nodeid)}-{n}"
            with contextlib.suppress(Exception):
                page.screenshot(path=f"{stem}.png", full_page=True)
                stem.with_suffix(".url.txt").write_text(page.url + "\n")
        if shared:
            page.close()
        else:
            context.close()


def settle(page: Page, watch: Watch, quiet_ms: int = 150, limit_ms: int = 30_000) -> None:
    """Wait until the page has no request in flight for `quiet_ms` (the requests htmx
    starts on load included): Playwright's "networkidle" waits a fixed 500 ms instead."""
    waited = quiet = 0
    step = 50
    while quiet < quiet_ms:
        assert waited < limit_ms, f"requests still in flight after {limit_ms} ms: {page.url}"
        page.wait_for_timeout(step)
        waited += step
        quiet = quiet + step if watch.in_flight == 0 else 0


def visit(page: Page, watch: Watch, url: str) -> PwResponse | None:
    """Go to `url`, wait for its load event and then for the network to go quiet."""
    answer = page.goto(url, wait_until="load")
    settle(page, watch)
    return answer


# --- Checks shared by the walk and the journeys ---------------------------------------

OVERFLOW_JS = """() => {
  const doc = document.documentElement;
  const wide = [];
  const scrolls = (el) => ['auto', 'scroll', 'hidden', 'clip']
    .includes(getComputedStyle(el).overflowX);
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
    + (typeof el.className === 'string' && el.className.trim()
       ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
  if (doc.scrollWidth > window.innerWidth) {
    for (const el of document.querySelectorAll('body *')) {
      const r = el.getBoundingClientRect();
      if (r.right <= window.innerWidth + 1 || r.width === 0) continue;
      // Inside a scroll box it scrolls there, unless it is positioned against something
      // outside the box (a visually hidden label in a table cell, say).
      const placed = ['absolute', 'fixed'].includes(getComputedStyle(el).position);
      let p = el.parentElement, inBox = false;
      while (p && p !== document.body) {
        if (scrolls(p)) { inBox = !placed; break; }
        p = p.parentElement;
      }
      if (!inBox) wide.push(name(el) + ' (right edge ' + Math.round(r.right) + ')');
      if (wide.length >= 5) break;
    }
  }
  return {scrollWidth: doc.scrollWidth, innerWidth: window.innerWidth, wide};
}"""


def overflow(page: Page) -> str:
    """'' when the page is no wider than the viewport, else what sticks out."""
    found = page.evaluate(OVERFLOW_JS)
    if found["scrollWidth"] <= found["innerWidth"]:
        return ""
    return (
        f"page is {found['scrollWidth']} px wide in a {found['innerWidth']} px viewport; "
        f"widest: {', '.join(found['wide']) or '?'}"
    )


# Attributes a program reads back: a grouped or comma-decimal number there is a bug.
GROUPED_NUMBERS_JS = """(pattern) => {
  const re = new RegExp(pattern);
  const machine = new RegExp('^(value|href|src|action|formaction|min|max|step|colspan|rowspan'
    + '|datetime|x|y|x1|x2|y1|y2|cx|cy|r|width|height|hx-.*|data-.*)$');
  const textual = /(message|label|text|title)$/;
  const typed = ['hidden', 'number', 'range'];
  const found = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      if (!machine.test(a.name) || textual.test(a.name)) continue;
      if (el.tagName === 'INPUT' && a.name === 'value' && !typed.includes(el.type)) continue;
      if (!re.test(a.value)) continue;
      found.push(el.tagName.toLowerCase() + '[' + a.name + '="' + a.value.slice(0, 80) + '"]');
      if (found.length >= 5) return found;
    }
  }
  return found;
}"""

# en groups thousands with "," (1,425); de writes decimals with "," (0,5): neither may
# appear in a number a machine reads.
LOCALIZED_NUMBER = {"en": r"\d,\d{3}(?!\d)", "de": r"\d,\d"}


def localized_numbers_in_attributes(page: Page, language: str) -> list[str]:
    return list(page.evaluate(GROUPED_NUMBERS_JS, LOCALIZED_NUMBER[language]))


def run_axe(page: Page, server: Server) -> list[dict[str, Any]]:
    """axe-core's violations of impact "serious" or "critical" on the page as it is.
    The vendored axe.min.js is loaded from the site's own static files, which the
    Content-Security-Policy allows (an inline copy would be refused)."""
    assert AXE.is_file(), f"{AXE} is missing (static/vendor/README.md says how to vendor it)"
    page.add_script_tag(url=server.at("/static/vendor/axe-core/axe.min.js"))
    result = page.evaluate(
        """async () => {
          const r = await axe.run(document, {resultTypes: ['violations']});
          return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => ({id: v.id, impact: v.impact, help: v.help,
                        nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
        }"""
    )
    return list(result)
