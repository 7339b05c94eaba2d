"""Load benchmark of the production processes: gunicorn with gunicorn.conf.py and a Celery
worker, on PostgreSQL and Redis, driven over real sockets on 127.0.0.1.

    python benchmarks/load.py pages [--quick] [--clients 8] [--requests 240] [--workers 2]
        [--threads 4] [--warm-wait-s 120] [--cold-cards 20] [--memory-cards 0] [--root DIR]
    python benchmarks/load.py hold [--keepalive 200] [--half-open 50] [--hold-s 20] [--restart]
    python benchmarks/load.py api [--quick] [--clients 8] [--requests 240]
    python benchmarks/load.py planner [--quick] [--clients 8] [--requests 240]
    python benchmarks/load.py abuse [--quick] [--clients 16] [--baseline-s 40] [--abuse-s 180]

Every mode creates a scratch database (rightsize_bench, dropped at the end) on the local
PostgreSQL, empty Redis database 9 (cache and Celery queue; emptied again at the end), run
the release step (migrate, collectstatic, load_catalog), add a bench user and start gunicorn
with the repository's configuration. GUNICORN_WORKERS and GUNICORN_THREADS come from
--workers and --threads (2 workers on 2 cores); WEB_CONCURRENCY (which
gunicorn.conf.py overrides anyway) and GUNICORN_CMD_ARGS (which would override it) are
removed from the server's environment. One run at a time: runs share the database and Redis.
--root serves another checkout (say `git archive HEAD` unpacked) with this script.

pages also starts a Celery worker as the Procfile does, then:
1. warm-up: waits at most --warm-wait-s until Redis's `celery` queue is empty and the worker
   holds no task (active, reserved or scheduled): a warm-up that load_catalog queued has run.
   Nothing queued, no wait.
2. cold cards: one client visits --cold-cards card pages (card across every model), spread
   over the catalog, each once, one after the other: p50 and max of those first visits.
3. memory: the clients visit every card page once (--memory-cards N: N of them, spread);
   then each gunicorn worker's RSS (VmRSS of the master's children).
4. pages: each page, and the login page before the first and after each, `--requests`
   requests from `--clients` keep-alive clients after 2 warm-up requests per client. The
   page's requests/s as a % of the login page's (mean of the runs just before and after it,
   on the same server: a ratio that holds on a noisy machine), p50/p95, and p50 as a
   multiple of the trivial view's (/health/live/: no database, no template). "varied" rows
   cycle over distinct configurator URLs (4 cards x 6 contexts x 5 weights formats x 4 GPU
   counts, half for the full page, half for the HTMX part), so a result cache cannot answer
   every request from one entry.
5. catalog edit: one accelerator's notes are changed through the ORM in a subprocess (as an
   admin save would); its card page and 4 others are visited right after, then 5 other card
   pages after the warm-up wait.
It ends with the workers' RSS, how many workers gunicorn replaced (max_requests), and the
page targets, each PASS or MISS. --quick: 80 requests per page, 10 cold cards, 150
card pages for the memory figure.

api: after the same warm-up, the configurator's HTMX results part and
POST /api/v1/estimate/ for the same setups (one fixed, then the varied ones), with an API
token of the bench user, p50 of the API as a multiple of the results part's; then one
client posts a batch of 100 distinct setups that nothing sized before 11 times: the first
(cold: the sizing cache has none of them) and the p50 and max of the rest. The API's
throttles are raised for the run (server_env).

planner: seed_demo's organization `demo` (its inventory machine, 2 x RTX 4090)
with the bench user as an admin; the trivial view, then the issue's worked example (qwen3-32b,
200 users, 30 s think time, 1,000 / 400 tokens at 8,192 context, TTFT p95 <= 1.5 s, >= 30
tok/s each, N+1) POSTed to /api/v1/o/demo/plans/ with an API token, and the planner page
/en/o/demo/planner/ with the same query, by the logged-in clients: p50/p95 and p50 as a
multiple of the trivial view's. The curves come from the sizing cache after the warm-up.

abuse: the API under a member who sends its most expensive allowed requests, with the
throttles and the work budget at their production defaults (docs/api.md, "Work budget").
A viewer of seed_demo's `demo` organization gets a read-only API token limited to it (the
token service, as the tokens page issues one); a batch of 100 analysed items of each of
ABUSE_MODELS is refused with 413 and its price, from which the largest batch one request
may send follows (50 items of Llama 3.1 8B, 25 of Llama 3.1 405B at the defaults). Then 2
clients a row browse for --baseline-s seconds: /health/live/ and the login page as a
visitor, the configurator's varied setups as the signed-in bench user (a member of `demo`).
Then the same browsing for --abuse-s seconds while --clients clients (16) send, each in
turn and again at once when refused: such a batch of analysed items at contexts no request
asked for before, one of the deepest model, a card across every model and the deepest
model on every card (show_all, 1,000 rows a page, fresh contexts). Prints the browsing
rows' p50/p95/p99 before and during (and p50 as a multiple of the login page's), the
expensive requests by kind and status (200, 413, 429, 503, other) with the longest each
took, the refusals by the limit they name, and the targets: /health/live/ p99 < 1 s and
the login page p95 < 2 s during the abuse, and every expensive request answered 200 within
API_WORK_DEADLINE_S + DEADLINE_MARGIN_S or refused in the API's error shape with a
message. --quick: a baseline of 20 s, 70 s of abuse (the minute's budget runs out once).
Exit status 1 when a browsing request was not answered 200 or a target was missed.

hold: `--keepalive` clients each keep a connection open and send a request every second,
while `--half-open` clients send half a request and hold (reconnecting when dropped), for
`--hold-s` seconds. Checks that PostgreSQL's connection count for the scratch database stays
at or under gunicorn's workers x (threads + API threads) and that /health/ keeps answering. With
--restart it then restarts PostgreSQL and Redis (this affects everything else using them)
and checks that pages come back with no manual step.

Everything is bounded: request counts, --hold-s, --warm-wait-s, a deadline on each wait and
each subprocess. Exit status 1 when a request was not answered 200 (targets only print).
"""

from __future__ import annotations

import argparse
import fcntl
import http.client
import json
import os
import random
import re
import runpy
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock
from urllib.parse import urlencode

import redis
from celery import Celery

PY = sys.executable
HOST = "127.0.0.1"
DB = "rightsize_bench"
REDIS_DB = 9
LOCK = Path("/tmp/rightsize-load-bench.lock")
USER, PASSWORD = "bench", "bench-pw-123-load"
MODEL, CARD = "llama-3-1-8b-instruct", "nvidia-h100-sxm5-80gb"
CONFIGURE = f"/en/models/{MODEL}/on/{CARD}/?quant=Q4_K_M&ctx=8192"
HTMX = {"HX-Request": "true"}
# The "varied" configurator rows: every combination once (the empty quant is "best that fits").
VARIED_CARDS = (CARD, "nvidia-h100-pcie-80gb", "nvidia-geforce-rtx-4090", "amd-instinct-mi300x")
VARIED_CTX = (2048, 4096, 8192, 16384, 32768, 65536)
VARIED_QUANTS = ("Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "")
VARIED_GPUS = (1, 2, 4, 8)
# The page targets.
CONFIGURATOR_PCT, HTMX_PCT, EXPLORE_PCT = 25.0, 50.0, 30.0
CARD_AFTER_EDIT_MS = 300.0
WORKER_RSS_MB = 200.0  # decimal megabytes
EDIT_VISITS = 5  # card pages timed right after the edit, and again after the warm-up
EDITED_CARD = "nvidia-a100-80gb-pcie"  # a seeded card (catalog/data/accelerators.json)


@dataclass(frozen=True)
class Page:
    """A row of the pages table: its URLs (cycled), headers and target, if any."""

    name: str
    paths: tuple[str, ...]
    headers: dict[str, str] = field(default_factory=dict)
    min_pct_of_login: float | None = None
    bodies: tuple[str, ...] = ()  # POSTed with the paths, cycled alike; none: GET


def varied_setups() -> list[tuple[str, dict[str, str | int]]]:
    """Distinct setups of MODEL (cards x contexts x weights x GPU counts) as (card, query),
    in a fixed shuffled order so that consecutive requests differ in every parameter."""
    setups: list[tuple[str, dict[str, str | int]]] = [
        (card, {"quant": quant, "ctx": ctx, "gpus": gpus})
        for card in VARIED_CARDS
        for ctx in VARIED_CTX
        for quant in VARIED_QUANTS
        for gpus in VARIED_GPUS
    ]
    random.Random(12).shuffle(setups)
    return setups


def configurator_variants() -> list[str]:
    """The varied setups as configurator URLs."""
    return [f"/en/models/{MODEL}/on/{card}/?" + urlencode(q) for card, q in varied_setups()]


def api_items() -> list[str]:
    """The varied setups as POST /api/v1/estimate/ bodies (the catalog shortcut)."""
    return [json.dumps({"model": MODEL, "accelerator": card, **q}) for card, q in varied_setups()]


def pages() -> list[Page]:
    """The pages table: the trivial view first (the p50 reference), the login page (the
    req/s reference, measured again before every row), then the pages."""
    varied = configurator_variants()
    full, part = tuple(varied[0::2]), tuple(varied[1::2])
    compare = (
        f"/en/compare/?c1={MODEL}:{CARD}:Q4_K_M:1&c2={MODEL}:nvidia-h100-pcie-80gb:Q4_K_M:2"
        f"&c3=qwen3-8b:{CARD}"
    )
    return [
        Page("trivial view (/health/live/)", ("/health/live/",)),
        Page("health (database, cache, broker)", ("/health/",)),
        Page("login page", ("/en/accounts/login/",)),
        Page("home", ("/en/",)),
        Page("configurator, full page", (CONFIGURE,), min_pct_of_login=CONFIGURATOR_PCT),
        Page(f"configurator, full, varied ({len(full)} URLs)", full, {}, CONFIGURATOR_PCT),
        Page("configurator, HTMX results part", (CONFIGURE,), HTMX, HTMX_PCT),
        Page(f"configurator, HTMX, varied ({len(part)} URLs)", part, HTMX, HTMX_PCT),
        Page("model on every card", (f"/en/models/{MODEL}/gpus/",), {}, EXPLORE_PCT),
        Page("card across every model", (f"/en/gpus/{CARD}/",), {}, EXPLORE_PCT),
        Page("compare, 3 columns", (compare,)),
    ]


LOGIN = Page("login page", ("/en/accounts/login/",))


@dataclass(frozen=True)
class Target:
    """One of the page targets beside what was measured."""

    name: str
    goal: str
    measured: str
    ok: bool


def psql(sql: str, database: str = "postgres") -> str:
    command = ["psql", "-h", HOST, "-U", "postgres", "-d", database, "-Atqc", sql]
    return subprocess.run(
        command, check=True, capture_output=True, text=True, timeout=120
    ).stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def server_env(port: int, workers: int, threads: int, *, throttles: bool = False) -> dict[str, str]:
    """The environment of every server process: production settings on loopback; the
    API's throttles at their defaults only with `throttles` (the abuse run)."""
    env = {k: v for k, v in os.environ.items() if k not in ("WEB_CONCURRENCY", "GUNICORN_CMD_ARGS")}
    environment = {
        **env,
        "DATABASE_URL": f"postgres://postgres@{HOST}:5432/{DB}",
        "REDIS_URL": f"redis://{HOST}:6379/{REDIS_DB}",
        "DEBUG": "False",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": HOST,
        # Plain http on loopback: no TLS redirect, cookies allowed over http.
        "SECURE_SSL_REDIRECT": "False",
        "SESSION_COOKIE_SECURE": "False",
        "CSRF_COOKIE_SECURE": "False",
        "SECURE_HSTS_SECONDS": "0",
        "GUNICORN_BIND": f"{HOST}:{port}",
        "GUNICORN_WORKERS": str(workers),
        "GUNICORN_THREADS": str(threads),
        "GUNICORN_LOGLEVEL": "info",  # its "Booting worker" lines count the replacements
        "LOG_LEVEL": "WARNING",  # one line per request would time the log, not the pages
    }
    if throttles:
        return environment
    # The API's per-user and per-token throttles (600/min) would time the throttle.
    return {**environment, "API_THROTTLE_USER": "1000000/min", "API_THROTTLE_TOKEN": "1000000/min"}


@contextmanager
def single_run() -> Iterator[None]:
    """Refuse to start while another run holds the lock: they would share DB and Redis."""
    with LOCK.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(f"another load benchmark is running ({LOCK} is locked)") from None
        yield


def flush_redis() -> None:
    """Empty the benchmark's Redis database: cold cache, no queued task from a past run."""
    redis.Redis(host=HOST, port=6379, db=REDIS_DB).flushdb()


def manage(root: Path, env: dict[str, str], *args: str) -> None:
    """One manage.py command, its output discarded, bounded to 10 minutes."""
    subprocess.run(
        [PY, "manage.py", *args],
        cwd=root,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=600,
    )


def release(root: Path, env: dict[str, str]) -> None:
    """The release step of `make serve`, plus the bench user."""
    psql(f"DROP DATABASE IF EXISTS {DB}")
    psql(f"CREATE DATABASE {DB}")
    flush_redis()
    for args in (["migrate"], ["collectstatic", "--noinput"], ["load_catalog"]):
        manage(root, env, *args, "--verbosity", "0")
    create_user = (
        "from django.contrib.auth.models import User; "
        f"User.objects.create_user({USER!r}, password={PASSWORD!r})"
    )
    manage(root, env, "shell", "-c", create_user)


@contextmanager
def process(command: list[str], root: Path, env: dict[str, str], log: Path) -> Iterator[int]:
    """Run `command` in its own session, output to `log`; yields its pid. At exit SIGTERM,
    and SIGKILL to its whole process group when it has not stopped after 40 s."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            command, cwd=root, env=env, stdout=out, stderr=out, start_new_session=True
        )
    try:
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@dataclass(frozen=True)
class Server:
    """The running gunicorn: its configuration as gunicorn reads it, master pid, log."""

    conf: dict[str, object]
    pid: int
    log: Path


@contextmanager
def gunicorn(root: Path, env: dict[str, str], port: int, log: Path) -> Iterator[Server]:
    """The production web command, once /health/ answers."""
    with mock.patch.dict(os.environ, env, clear=True):
        conf = runpy.run_path(str(root / "gunicorn.conf.py"))
    command = [PY, "-m", "gunicorn", "-c", "gunicorn.conf.py", "sizing_site.wsgi"]
    with process(command, root, env, log) as pid:
        wait_for(lambda: status(port, "/health/") == 200, seconds=60, what="gunicorn start")
        yield Server(conf, pid, log)


class CeleryWorker:
    """The Procfile's worker; its queue as Redis and the worker's remote control see it."""

    def __init__(self, url: str, log: Path) -> None:
        self.app = Celery(broker=url)
        self.redis = redis.Redis.from_url(url)
        self.log = log
        self.reported = 0

    def busy(self) -> int | None:
        """Tasks queued in Redis or held by the worker; None while the worker is silent."""
        inspect = self.app.control.inspect(timeout=1.0, limit=1)
        held = [inspect.active(), inspect.reserved(), inspect.scheduled()]
        if any(reply is None for reply in held):
            return None
        queued = int(self.redis.llen("celery"))
        return queued + sum(len(tasks) for reply in held if reply for tasks in reply.values())

    def wait_idle(self, seconds: float) -> float | None:
        """Seconds until nothing was queued or held at two polls in a row; None past
        `seconds`. Two polls: a task between the queue and the worker shows in neither."""
        started = time.monotonic()
        idle = 0
        while time.monotonic() - started < seconds:
            idle = idle + 1 if self.busy() == 0 else 0
            if idle == 2:
                return time.monotonic() - started
            time.sleep(0.5)
        return None

    def new_tasks(self) -> list[str]:
        """Tasks finished since the last call, as the worker logged them."""
        pattern = re.compile(r"Task (\S+)\[[^\]]+\] (succeeded in [\d.]+s|raised \w+)")
        done = pattern.findall(self.log.read_text(errors="replace"))
        fresh, self.reported = done[self.reported :], len(done)
        return [f"{name} {outcome}" for name, outcome in fresh]


@contextmanager
def celery_worker(root: Path, env: dict[str, str], log: Path) -> Iterator[CeleryWorker]:
    """The Procfile's `worker` process, once it answers a ping."""
    concurrency = env.get("CELERY_CONCURRENCY", "2")
    command = [PY, "-m", "celery", "-A", "sizing_site", "worker", "--loglevel", "INFO"]
    command += ["--concurrency", concurrency, "--without-gossip", "--without-mingle"]
    with process(command, root, env, log):
        worker = CeleryWorker(env["REDIS_URL"], log)
        wait_for(lambda: bool(worker.app.control.ping(timeout=1.0)), seconds=60, what="celery")
        yield worker


def wait_for(ready: Callable[[], bool], *, seconds: float, what: str) -> float:
    """Seconds until `ready()` held; raises past the deadline."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            if ready():
                return time.monotonic() - started
        except OSError:
            pass
        time.sleep(0.25)
    raise SystemExit(f"{what}: not ready after {seconds:g} s")


def status(port: int, path: str, headers: dict[str, str] | None = None) -> int:
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


class Client:
    """One keep-alive connection with its own cookies (session, CSRF)."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection(HOST, port, timeout=30)
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: str = "", **headers: str) -> tuple[int, str]:
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        try:
            self.conn.request(method, path, body=body or None, headers=headers)
            response = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionError):
            self.conn.close()  # the server closed a kept-alive connection: reconnect once
            self.conn.request(method, path, body=body or None, headers=headers)
            response = self.conn.getresponse()
        for value in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name] = rest.split(";", 1)[0]
        return response.status, response.read().decode("utf-8", "replace")

    def login(self) -> None:
        _, page = self.request("GET", "/en/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token, "no CSRF token on the login page"
        form = urlencode({"csrfmiddlewaretoken": token[1], "username": USER, "password": PASSWORD})
        code, _ = self.request(
            "POST",
            "/en/accounts/login/",
            form,
            **{"Content-Type": "application/x-www-form-urlencoded", "Referer": f"http://{HOST}/"},
        )
        assert code == 302, f"login answered {code}"


@dataclass(frozen=True)
class PageResult:
    requests: int
    seconds: float
    p50_ms: float
    p95_ms: float
    failures: tuple[str, ...]  # "<status or exception> <path>" of each request not answered 200

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def errors(self) -> int:
        return len(self.failures)


def describe_failures(failures: Sequence[str]) -> str:
    """'' when there are none, else their count and the first."""
    return f" ({len(failures)} not 200, first: {failures[0]})" if failures else ""


def drive(
    clients: Sequence[Client],
    paths: Sequence[str],
    headers: dict[str, str],
    total: int,
    *,
    start: int = 0,
    deadline_s: float = 600.0,
    bodies: Sequence[str] = (),
) -> PageResult:
    """`total` requests shared by the clients, all at once; request k asks for
    paths[(start + k) % len(paths)] (a POST of bodies[(start + k) % len(bodies)] when there
    are bodies). A failed request counts as an error, not 200."""
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def run(first: int, client: Client) -> None:
        for k in range(first, total, len(clients)):
            path = paths[(start + k) % len(paths)]
            body = bodies[(start + k) % len(bodies)] if bodies else ""
            started = time.perf_counter()
            try:
                outcome = str(client.request("POST" if bodies else "GET", path, body, **headers)[0])
            except (OSError, http.client.HTTPException) as error:  # timeout: no answer in 30 s
                outcome = type(error).__name__
                client.conn.close()
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                if outcome != "200":
                    failures.append(f"{outcome} {path}")

    threads = [
        threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(clients)
    ]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(0.0, deadline_s - (time.perf_counter() - started)))
    if any(t.is_alive() for t in threads):
        raise SystemExit(f"{paths[0]}: requests still running after {deadline_s:g} s")
    seconds = time.perf_counter() - started
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))]
    return PageResult(
        len(latencies),
        seconds,
        statistics.median(latencies) * 1000,
        p95 * 1000,
        tuple(failures),
    )


def measure(clients: Sequence[Client], page: Page, total: int) -> PageResult:
    """2 warm-up requests per client (caches, connections), then `total` timed ones that
    continue the page's cycle of URLs."""
    warm = 2 * len(clients)
    drive(clients, page.paths, page.headers, warm, bodies=page.bodies)
    return drive(clients, page.paths, page.headers, total, start=warm, bodies=page.bodies)


def logged_in_client(port: int) -> Client:
    client = Client(port)
    client.login()
    return client


def card_slugs() -> list[str]:
    """The slug of every card with a card page, sorted (vendors in turn): those with memory
    and bandwidth, which the estimator can size (explore_accelerator; others are 404)."""
    sql = (
        "select slug from catalog_accelerator where memory_gb > 0 and bandwidth_gbps > 0 "
        "order by slug"
    )
    return psql(sql, DB).split()


def spread(items: Sequence[str], n: int) -> list[str]:
    """`n` of `items`, evenly spaced from the first."""
    count = min(n, len(items))
    return [items[i * len(items) // count] for i in range(count)]


def first_visits(client: Client, slugs: Sequence[str]) -> tuple[list[float], list[str]]:
    """Milliseconds of one GET of each card page, one after the other, and the failures.
    A /health/live/ request before each keeps the connection open (not timed)."""
    times, failures = [], []
    for slug in slugs:
        client.request("GET", "/health/live/")
        path = f"/en/gpus/{slug}/"
        started = time.perf_counter()
        code, _ = client.request("GET", path)
        times.append((time.perf_counter() - started) * 1000)
        if code != 200:
            failures.append(f"{code} {path}")
    return times, failures


def describe_visits(slugs: Sequence[str], times: Sequence[float], failures: Sequence[str]) -> str:
    slowest = max(range(len(times)), key=times.__getitem__)
    text = (
        f"p50 {statistics.median(times):.0f} ms, max {times[slowest]:.0f} ms "
        f"({slugs[slowest]}) over {len(times)}"
    )
    return text + describe_failures(failures)


def each_visit(slugs: Sequence[str], times: Sequence[float]) -> str:
    return ", ".join(f"{slug} {ms:.0f}" for slug, ms in zip(slugs, times, strict=True))


def worker_pids(master: int) -> list[int]:
    """gunicorn's workers: the master's child processes, from /proc."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the command name (in parentheses, may hold spaces): state, ppid, ...
        if int(stat.rsplit(")", 1)[1].split()[1]) == master:
            children.append(int(entry.name))
    return sorted(children)


def rss_mb(pid: int) -> float:
    """Resident set size (VmRSS) in decimal megabytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024 / 1e6
    return 0.0


def workers_rss(server: Server) -> dict[int, float]:
    return {pid: rss_mb(pid) for pid in worker_pids(server.pid)}


def describe_rss(rss: dict[int, float]) -> str:
    return ", ".join(f"pid {pid} {mb:.0f} MB" for pid, mb in rss.items())


def replacements(server: Server) -> int:
    """Workers gunicorn has started beyond its configured count (max_requests recycling,
    crashes), counted in its log."""
    boots = server.log.read_text(errors="replace").count("Booting worker with pid")
    return max(0, boots - int(str(server.conf["workers"])))


def warm_up(worker: CeleryWorker, seconds: float, when: str) -> None:
    """Wait for the worker to finish what is queued (at most `seconds`); print the tasks."""
    if seconds <= 0:
        print(f"warm-up wait {when}: off (--warm-wait-s 0)")
    else:
        waited = worker.wait_idle(seconds)
        done = f"worker idle after {waited:.1f} s" if waited is not None else "still busy"
        print(f"warm-up wait {when} (at most {seconds:g} s): {done}")
    tasks = worker.new_tasks()
    print("  tasks run since the last wait: " + ("; ".join(tasks) or "none"))


def pages_table(clients: Sequence[Client], total: int, targets: list[Target]) -> int:
    """The pages table; appends the req/s targets; returns the requests not answered 200.

    The login page is measured before the first page and after each: a page is compared
    with the mean of the login runs just before and just after it, on the same server."""
    print(
        f"pages: {total} requests per page from {len(clients)} keep-alive clients; login "
        "figures: mean of the login page's runs just before and just after each page"
    )
    print(
        f"  {'page':<42} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} {'login/s':>8} "
        f"{'login p50':>9} {'% login':>8} {'p50/triv':>9}  target"
    )
    trivial_p50, failed = 0.0, 0
    before = measure(clients, LOGIN, total)
    for page in pages():
        result = measure(clients, page, total)
        after = measure(clients, LOGIN, total)
        login_rate = (before.rate + after.rate) / 2
        login_p50 = (before.p50_ms + after.p50_ms) / 2
        trivial_p50 = trivial_p50 or result.p50_ms
        pct = 100 * result.rate / login_rate
        goal = ""
        if page.min_pct_of_login is not None:
            ok = pct >= page.min_pct_of_login
            goal = f">= {page.min_pct_of_login:g} % {'PASS' if ok else 'MISS'}"
            target = f"req/s >= {page.min_pct_of_login:g} % of login"
            targets.append(Target(page.name, target, f"{pct:.1f} %", ok))
        failures = before.failures + result.failures
        print(
            f"  {page.name:<42} {result.rate:7.1f} {result.p50_ms:7.1f} {result.p95_ms:7.1f} "
            f"{login_rate:8.1f} {login_p50:9.1f} {pct:7.1f}% "
            f"{result.p50_ms / trivial_p50:8.1f}x  {goal}" + describe_failures(failures)
        )
        failed += len(failures)
        before = after
    return failed + before.errors


def edit_accelerator(root: Path, env: dict[str, str], slug: str) -> None:
    """Change one accelerator's notes and save it through the ORM, as an admin edit does
    (the save signal runs), in a separate process like the admin's request."""
    code = (
        "from catalog.models import Accelerator; "
        f"a = Accelerator.objects.get(slug={slug!r}); "
        "a.notes = (a.notes + ' (edited by benchmarks/load.py)').strip(); a.save()"
    )
    manage(root, env, "shell", "-c", code)


def edit_phase(
    args: argparse.Namespace,
    env: dict[str, str],
    worker: CeleryWorker,
    clients: Sequence[Client],
    cards: Sequence[str],
) -> tuple[list[Target], int]:
    """First visits of card pages right after a catalog edit (the edited card's first, then
    others spread over `cards`), and of other cards after the warm-up wait. Before the edit
    the clients ask for one card page twice each, so that a worker gunicorn has just
    replaced (max_requests) does not pay its first card page in these figures."""
    drive(clients, [f"/en/gpus/{CARD}/"], {}, 2 * len(clients))
    others = [slug for slug in cards if slug != EDITED_CARD]
    after_edit = [EDITED_CARD, *spread(others[0::2], EDIT_VISITS - 1)]
    after_warm = spread(others[1::2], EDIT_VISITS)
    edit_accelerator(args.root, env, EDITED_CARD)
    print(f"catalog edit: the notes of {EDITED_CARD} saved through the ORM (manage.py shell)")
    times, failures = first_visits(clients[0], after_edit)
    print(f"  right after (ms): {each_visit(after_edit, times)}{describe_failures(failures)}")
    warm_up(worker, args.warm_wait_s, "after the edit")
    later, later_failures = first_visits(clients[0], after_warm)
    print(f"  after the wait (ms): {each_visit(after_warm, later)}")
    print(f"  {describe_visits(after_warm, later, later_failures)}")
    targets = [
        card_target("edited card's page, first visit after", times[0]),
        card_target(f"{len(times)} card pages after the edit, max", max(times)),
        card_target(f"{len(later)} card pages after the warm-up, max", max(later)),
    ]
    return targets, len(failures) + len(later_failures)


def card_target(name: str, ms: float) -> Target:
    """A card page's time after a catalog edit against the page limit."""
    return Target(name, f"<= {CARD_AFTER_EDIT_MS:g} ms", f"{ms:.0f} ms", ms <= CARD_AFTER_EDIT_MS)


def memory_phase(
    server: Server, clients: Sequence[Client], slugs: Sequence[str], count: int
) -> tuple[Target, int]:
    """Every card page once (or `count` of them, spread), from all clients; then each
    gunicorn worker's RSS against the target."""
    visited = spread(slugs, count) if count else list(slugs)
    before = workers_rss(server)
    paths = [f"/en/gpus/{slug}/" for slug in visited]
    every = drive(clients, paths, {}, len(paths), deadline_s=max(600.0, 2.0 * len(paths)))
    after = workers_rss(server)
    print(
        f"memory: {len(visited)} of {len(slugs)} card pages once in {every.seconds:.1f} s, "
        f"p50 {every.p50_ms:.0f} ms, p95 {every.p95_ms:.0f} ms"
        f"{describe_failures(every.failures)}; worker RSS before: {describe_rss(before)}; "
        f"after: {describe_rss(after)}; workers replaced so far: {replacements(server)}"
    )
    name = "worker RSS after " + ("every card page" if not count else f"{count} card pages")
    measured = ", ".join(f"{mb:.0f}" for mb in after.values()) + " MB"
    ok = bool(after) and max(after.values()) <= WORKER_RSS_MB
    return Target(name, f"<= {WORKER_RSS_MB:g} MB each", measured, ok), every.errors


def print_load() -> None:
    """The machine's load average: the other processes the figures shared the cores with."""
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


def pages_mode(args: argparse.Namespace, env: dict[str, str], port: int, server: Server) -> int:
    """Warm-up, cold cards, memory, the pages table, the catalog edit; then the targets."""
    log = server.log.with_name(server.log.stem + "-celery.log")
    with celery_worker(args.root, env, log) as worker:
        print(
            f"gunicorn: {server.conf['workers']} workers ({len(worker_pids(server.pid))} "
            f"running) x {server.conf['threads']} threads, max_requests "
            f"{server.conf['max_requests']}; {os.cpu_count()} cores; celery worker "
            f"--concurrency {env.get('CELERY_CONCURRENCY', '2')}; logs {server.log}, {log}"
        )
        print_load()
        warm_up(worker, args.warm_wait_s, "after load_catalog")
        clients = [logged_in_client(port) for _ in range(args.clients)]
        slugs = card_slugs()
        cold = spread(slugs, args.cold_cards)
        times, failures = first_visits(clients[0], cold)
        print(f"cold cards, first visit of each: {describe_visits(cold, times, failures)}")
        failed = len(failures)
        memory, errors = memory_phase(server, clients, slugs, args.memory_cards)
        targets = [memory]
        failed += errors + pages_table(clients, args.requests, targets)
        rest = [slug for slug in slugs if slug not in cold and slug != CARD]
        edit_targets, errors = edit_phase(args, env, worker, clients, rest)
        targets += edit_targets
        failed += errors
        print(
            f"end: worker RSS {describe_rss(workers_rss(server))}; workers replaced during "
            f"the run (max_requests): {replacements(server)}"
        )
    print_load()
    print("targets:")
    for t in targets:
        print(f"  {t.name:<44} {t.goal:<28} {t.measured:>12}  {'PASS' if t.ok else 'MISS'}")
    if failed:
        print(f"{failed} requests not answered 200")
    return 1 if failed else 0


API_ESTIMATE = "/api/v1/estimate/"
BATCH = 100  # items in one batch request (under 1 s on this machine's 2 cores)
BATCH_RUNS = 10
BATCH_CTX = (3072, 6144, 12288, 24576, 49152)  # 4 cards x 5 contexts x 5 weights = 100
API_P50_LIMIT = 2.0  # one request's p50 at most 2x the configurator's results part


def api_token(root: Path, env: dict[str, str]) -> str:
    """An API token of the bench user (sizing_site.tokens), as its owner sees it once."""
    code = (
        "from django.contrib.auth.models import User; "
        "from sizing_site.tokens.services import token_create; "
        f"print(token_create(user=User.objects.get(username={USER!r}), name='bench').plain)"
    )
    return shell_output(root, env, code)


def api_mode(args: argparse.Namespace, env: dict[str, str], port: int, server: Server) -> int:
    """The API figures on the production server: one estimate against the
    configurator's HTMX results part for the same setups (p50 ratio), and a batch of 100."""
    log = server.log.with_name(server.log.stem + "-celery.log")
    with celery_worker(args.root, env, log) as worker:
        print(
            f"gunicorn: {server.conf['workers']} workers x {server.conf['threads']} threads; "
            f"{os.cpu_count()} cores"
        )
        print_load()
        warm_up(worker, args.warm_wait_s, "after load_catalog")
        bearer = {"Authorization": f"Bearer {api_token(args.root, env)}"}
        json_headers = {**bearer, "Content-Type": "application/json"}
        clients = [logged_in_client(port) for _ in range(args.clients)]
        varied, items = configurator_variants(), api_items()
        one = json.dumps({"model": MODEL, "accelerator": CARD, "quant": "Q4_K_M", "ctx": 8192})
        rows = [
            (Page("trivial view (/health/live/)", ("/health/live/",)), None),
            (Page("configurator, HTMX results part", (CONFIGURE,), HTMX), None),
            (Page("API estimate, same setup", (API_ESTIMATE,), json_headers, None, (one,)), 1),
            (Page(f"configurator, HTMX, varied ({len(varied)})", tuple(varied), HTMX), None),
            (
                Page(
                    f"API estimate, varied ({len(items)})",
                    (API_ESTIMATE,),
                    json_headers,
                    None,
                    tuple(items),
                ),
                3,
            ),
        ]
        print(f"one request: {args.requests} requests per row from {len(clients)} clients")
        print(f"  {'row':<40} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} {'p50/triv':>9}")
        results: list[PageResult] = []
        failed = 0
        for page, _ in rows:
            result = measure(clients, page, args.requests)
            results.append(result)
            failed += result.errors
            print(
                f"  {page.name:<40} {result.rate:7.1f} {result.p50_ms:7.1f} {result.p95_ms:7.1f} "
                f"{result.p50_ms / results[0].p50_ms:8.1f}x" + describe_failures(result.failures)
            )
        targets = []
        for (page, part), result in zip(rows, results, strict=True):
            if part is None:
                continue
            ratio = result.p50_ms / results[part].p50_ms
            goal = f"p50 <= {API_P50_LIMIT:g}x {rows[part][0].name}"
            targets.append(Target(page.name, goal, f"{ratio:.2f}x", ratio <= API_P50_LIMIT))
        # Setups none of the rows above sized (other contexts): the first run is cold.
        batch = json.dumps(
            [
                {"model": MODEL, "accelerator": card, "quant": quant, "ctx": ctx}
                for card in VARIED_CARDS
                for ctx in BATCH_CTX
                for quant in VARIED_QUANTS
            ][:BATCH]
        )
        client = clients[0]
        times = []
        for _ in range(BATCH_RUNS + 1):
            started = time.perf_counter()
            code, text = client.request("POST", API_ESTIMATE, batch, **json_headers)
            times.append(time.perf_counter() - started)
            answers = json.loads(text) if code == 200 else []
            bad = sum("errors" in a for a in answers)
            if code != 200 or len(answers) != BATCH or bad:
                failed += 1
                print(f"  batch answered {code}, {len(answers)} answers, {bad} with errors")
        first, rest = times[0], sorted(times[1:])
        print(
            f"batch of {BATCH} distinct setups in one request, one client: first "
            f"{first * 1000:.0f} ms (the sizing cache cold for these setups), then "
            f"{BATCH_RUNS} runs p50 {statistics.median(rest) * 1000:.0f} ms, max "
            f"{rest[-1] * 1000:.0f} ms"
        )
        slowest = max(times)
        targets.append(
            Target(f"batch of {BATCH}", "every run < 1 s", f"{slowest * 1000:.0f} ms", slowest < 1)
        )
    print_load()
    print("targets:")
    for t in targets:
        print(f"  {t.name:<44} {t.goal:<50} {t.measured:>8}  {'PASS' if t.ok else 'MISS'}")
    if failed:
        print(f"{failed} requests not answered 200")
    return 1 if failed else 0


PLANNER_ORG = "demo"
PLANNER_EXAMPLE = {"model": "qwen3-32b", "users": 200, "n_plus_one": True}
PLANNER_QUERY = "model=qwen3-32b&users=200&n_plus_one=on"


def join_demo_org(root: Path, env: dict[str, str]) -> None:
    """seed_demo (the demo organization and its inventory machine), the bench user an admin."""
    manage(root, env, "seed_demo", "--allow-production")
    code = (
        "from django.contrib.auth.models import User; "
        "from sizing_site.tenancy.models import Membership, Organization, Role; "
        f"Membership.all_tenants.get_or_create(user=User.objects.get(username={USER!r}), "
        f"organization=Organization.objects.get(slug={PLANNER_ORG!r}), "
        "defaults={'role': Role.ADMIN})"
    )
    manage(root, env, "shell", "-c", code)


def planner_mode(args: argparse.Namespace, env: dict[str, str], port: int, server: Server) -> int:
    """The planner on the production server: the worked example through the API and
    the planner page, against the trivial view."""
    log = server.log.with_name(server.log.stem + "-celery.log")
    join_demo_org(args.root, env)
    with celery_worker(args.root, env, log) as worker:
        print(
            f"gunicorn: {server.conf['workers']} workers x {server.conf['threads']} threads; "
            f"{os.cpu_count()} cores"
        )
        print_load()
        warm_up(worker, args.warm_wait_s, "after load_catalog")
        bearer = {"Authorization": f"Bearer {api_token(args.root, env)}"}
        json_headers = {**bearer, "Content-Type": "application/json"}
        clients = [logged_in_client(port) for _ in range(args.clients)]
        api = f"/api/v1/o/{PLANNER_ORG}/plans/"
        page = f"/en/o/{PLANNER_ORG}/planner/?{PLANNER_QUERY}"
        body = json.dumps(PLANNER_EXAMPLE)
        # The first plan builds the curves (cold); the rows below are warm.
        started = time.perf_counter()
        code, text = clients[0].request("POST", api, body, **json_headers)
        cold = time.perf_counter() - started
        failed = 0 if code == 200 else 1
        cheapest = (json.loads(text).get("cheapest") or {}) if code == 200 else {}
        print(
            f"first plan (cold curves): {cold * 1000:.0f} ms, answered {code}; cheapest: "
            f"{cheapest.get('label')} TP{cheapest.get('tensor_parallel')} x "
            f"{cheapest.get('replicas')} replicas, {cheapest.get('monthly_usd')} USD/month"
        )
        rows = [
            Page("trivial view (/health/live/)", ("/health/live/",)),
            Page("API plan, worked example", (api,), json_headers, None, (body,)),
            Page("planner page, same query", (page,)),
        ]
        print(f"{args.requests} requests per row from {len(clients)} clients")
        print(f"  {'row':<40} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} {'p50/triv':>9}")
        results: list[PageResult] = []
        for row in rows:
            result = measure(clients, row, args.requests)
            results.append(result)
            failed += result.errors
            print(
                f"  {row.name:<40} {result.rate:7.1f} {result.p50_ms:7.1f} {result.p95_ms:7.1f} "
                f"{result.p50_ms / results[0].p50_ms:8.1f}x" + describe_failures(result.failures)
            )
    print_load()
    if failed:
        print(f"{failed} requests not answered 200")
    return 1 if failed else 0


# --- abuse: the most expensive allowed API requests while others browse ----------------

ABUSER = "abuser"  # a viewer of PLANNER_ORG with a read-only token
# An ordinary model and the catalog's deepest (126 layers: each estimate costs 1.97 units).
ABUSE_MODELS = (MODEL, "llama-3-1-405b-instruct")
ABUSE_KINDS = ("batch, ordinary model", "batch, deepest model", "card sweep", "model sweep")
DEADLINE_MARGIN_S = 2.0  # past API_WORK_DEADLINE_S: the last item, the answer's encoding
HEALTH_P99_S, LOGIN_P95_S = 1.0, 2.0
PROBE_ITEMS = 100  # the probe batch, refused with its price: the largest batch follows


def shell_output(root: Path, env: dict[str, str], code: str) -> str:
    """The last line `manage.py shell -c code` printed."""
    out = subprocess.run(
        [PY, "manage.py", "shell", "-c", code],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return out.strip().splitlines()[-1]


def abuser_token(root: Path, env: dict[str, str]) -> str:
    """A viewer of the demo organization and its read-only API token (limited to that
    organization), made by the token service as the tokens page makes one."""
    code = (
        "from django.contrib.auth.models import User; "
        "from sizing_site.tenancy.models import Membership, Organization, Role; "
        "from sizing_site.tokens.services import token_create; "
        f"org = Organization.objects.get(slug={PLANNER_ORG!r}); "
        f"user = User.objects.create_user({ABUSER!r}); "
        "Membership.all_tenants.create(user=user, organization=org, role=Role.VIEWER); "
        "print(token_create(user=user, name='abuse', organization=org, read_only=True).plain)"
    )
    return shell_output(root, env, code)


class Contexts:
    """Context lengths no request of the run asked for before (the sizing cache misses),
    shared by the abusing clients."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.next = 1100

    def take(self, n: int) -> list[int]:
        with self.lock:
            first = self.next
            self.next += n
            if self.next > 120_000:  # under every model's limit; wraps after ~2,400 batches
                self.next = 1100
        return list(range(first, first + n))


@dataclass
class Abuse:
    """The expensive requests: the batch size each model's price allows, and what came back."""

    headers: dict[str, str]
    batch_items: dict[str, int]  # model slug -> items of one batch within the budget
    contexts: Contexts = field(default_factory=Contexts)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # (kind, status or exception name, seconds, the refusal's `limit`, a clear error?)
    outcomes: list[tuple[str, str, float, str, bool]] = field(default_factory=list)

    def request(self, kind: int) -> tuple[str, str, str]:
        """(method, path, body) of the next request of this kind, at fresh contexts."""
        cards = VARIED_CARDS
        if kind < 2:
            model = ABUSE_MODELS[kind]
            contexts = self.contexts.take(self.batch_items[model])
            items = [
                {
                    "model": model,
                    "accelerator": cards[n % len(cards)],
                    "quant": VARIED_QUANTS[n % len(VARIED_QUANTS)],
                    "ctx": ctx,
                    "analysis": True,
                }
                for n, ctx in enumerate(contexts)
            ]
            return "POST", API_ESTIMATE, json.dumps(items)
        ctx = self.contexts.take(1)[0]
        query = urlencode({"ctx": ctx, "show_all": "true", "page_size": 1000})
        if kind == 2:
            return "GET", f"/api/v1/sweeps/accelerators/{cards[ctx % 4]}/models/?{query}", ""
        return "GET", f"/api/v1/sweeps/models/{ABUSE_MODELS[1]}/accelerators/?{query}", ""


def refusal(text: str) -> tuple[str, bool]:
    """A refusal's `limit` (the throttles name none) and whether it is a clear error: the
    API's error shape with a message."""
    try:
        body = json.loads(text)
    except ValueError:
        return "", False
    if not isinstance(body, dict):
        return "", False
    messages = (body.get("errors") or {}).get("detail") or []
    return str(body.get("limit") or "throttle"), bool(messages and all(messages))


def probe_batch_sizes(port: int, headers: dict[str, str]) -> dict[str, int]:
    """The largest batch of analysed items each model's price allows, as an abuser finds
    it: a batch of PROBE_ITEMS is refused with 413, its cost and the budget in the body."""
    client = Client(port)
    sizes = {}
    for model in ABUSE_MODELS:
        items = [
            {"model": model, "accelerator": CARD, "ctx": 1024 + n, "analysis": True}
            for n in range(PROBE_ITEMS)
        ]
        code, text = client.request("POST", API_ESTIMATE, json.dumps(items), **headers)
        if code != 413:
            raise SystemExit(f"probe batch of {PROBE_ITEMS} {model} items answered {code}")
        body = json.loads(text)
        per_item = body["cost"] / PROBE_ITEMS
        sizes[model] = min(PROBE_ITEMS, int(body["allowed"] // per_item))
        print(
            f"  {model}: {PROBE_ITEMS} analysed items cost {body['cost']} units, one request "
            f"{body['allowed']}: batches of {sizes[model]}"
        )
    return sizes


def abuse_client(port: int, abuse: Abuse, first_kind: int, stop: threading.Event) -> None:
    """One abusing client: the kinds in turn, each sent again at once when refused."""
    client = Client(port)
    client.conn.timeout = 120.0
    kind = first_kind
    while not stop.is_set():
        method, path, body = abuse.request(kind)
        started = time.perf_counter()
        try:
            code, text = client.request(method, path, body, **abuse.headers)
            outcome = str(code)
        except (OSError, http.client.HTTPException) as error:
            outcome, text = type(error).__name__, ""
            client.conn.close()
        elapsed = time.perf_counter() - started
        limit, clear = refusal(text) if outcome in ("413", "429", "503") else ("", False)
        with abuse.lock:
            abuse.outcomes.append((ABUSE_KINDS[kind], outcome, elapsed, limit, clear))
        kind = (kind + 1) % len(ABUSE_KINDS)


@dataclass
class Browsing:
    """Latencies of the browsing rows, by row name, and the failures (not 200)."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def browse_client(
    client: Client,
    name: str,
    paths: Sequence[str],
    seen: Browsing,
    stop: threading.Event,
    offset: int,
) -> None:
    """GET the row's paths in turn until `stop`, timing each."""
    k = offset
    while not stop.is_set():
        path = paths[k % len(paths)]
        k += 1
        started = time.perf_counter()
        try:
            outcome = str(client.request("GET", path)[0])
        except (OSError, http.client.HTTPException) as error:
            outcome = type(error).__name__
            client.conn.close()
        elapsed = time.perf_counter() - started
        with seen.lock:
            seen.latencies.setdefault(name, []).append(elapsed)
            if outcome != "200":
                seen.failures.append(f"{outcome} {path}")


def browse_rows() -> list[tuple[str, tuple[str, ...], bool]]:
    """(row, paths, signed in): the trivial view, the login page as a visitor, and the
    configurator's varied setups as a signed-in member of the demo organization."""
    return [
        ("/health/live/", ("/health/live/",), False),
        ("login page", ("/en/accounts/login/",), False),
        ("configurator page, varied", tuple(configurator_variants()), True),
    ]


def browse(
    port: int, seconds: float, per_row: int, abuse: Abuse | None = None, abusers: int = 0
) -> Browsing:
    """The browsing rows, `per_row` clients each, for `seconds`; with `abuse`, `abusers`
    abusing clients at the same time (their requests in flight at the end are waited for)."""
    seen, stop = Browsing(), threading.Event()
    threads = []
    for name, paths, signed_in in browse_rows():
        for n in range(per_row):
            client = logged_in_client(port) if signed_in else Client(port)
            args = (client, name, paths, seen, stop, n * 37)
            threads.append(threading.Thread(target=browse_client, args=args, daemon=True))
    for n in range(abusers if abuse else 0):
        args = (port, abuse, n % len(ABUSE_KINDS), stop)
        threads.append(threading.Thread(target=abuse_client, args=args, daemon=True))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=180)
    if any(t.is_alive() for t in threads):
        raise SystemExit("abuse: clients still waiting 180 s after the end")
    return seen


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def print_browsing(base: Browsing, loaded: Browsing) -> None:
    print(
        f"  {'row':<28} {'':>5}{'baseline':^30} {'':>3}{'under abuse':^30}\n"
        f"  {'':<28} {'n':>5} {'p50':>7} {'p95':>7} {'p99':>7} {'/login':>6}"
        f" {'n':>5} {'p50':>7} {'p95':>7} {'p99':>7} {'/login':>6}   (ms; p50 / login p50)"
    )
    for name, _, _ in browse_rows():
        cells = []
        for seen in (base, loaded):
            times = seen.latencies.get(name) or [float("nan")]
            login = statistics.median(seen.latencies.get("login page") or [float("nan")])
            cells.append(
                f"{len(times):5d} {statistics.median(times) * 1000:7.1f} "
                f"{quantile(times, 0.95) * 1000:7.1f} {quantile(times, 0.99) * 1000:7.1f} "
                f"{statistics.median(times) / login:5.1f}x"
            )
        print(f"  {name:<28} {cells[0]} {cells[1]}")


def print_abuse(abuse: Abuse) -> None:
    statuses = ("200", "413", "429", "503")
    print(
        f"  {'kind':<22} {'sent':>5} "
        + " ".join(f"{s:>5}" for s in statuses)
        + f" {'other':>5} {'max s':>6} {'max s, 200':>10}"
    )
    for kind in (*ABUSE_KINDS, "all"):
        rows = [o for o in abuse.outcomes if kind in ("all", o[0])]
        counts = Counter(o[1] for o in rows)
        other = sum(n for s, n in counts.items() if s not in statuses)
        done = [o[2] for o in rows if o[1] == "200"]
        print(
            f"  {kind:<22} {len(rows):5d} "
            + " ".join(f"{counts[s]:5d}" for s in statuses)
            + f" {other:5d} {max((o[2] for o in rows), default=0):6.2f}"
            f" {max(done, default=0):10.2f}"
        )
    limits = Counter(o[3] for o in abuse.outcomes if o[1] in ("413", "429", "503"))
    print("  refusals by limit: " + ", ".join(f"{k} {n}" for k, n in sorted(limits.items())))
    odd = Counter(o[1] for o in abuse.outcomes if o[1] not in statuses)
    if odd:
        print("  other answers: " + ", ".join(f"{k} {n}" for k, n in sorted(odd.items())))


def abuse_targets(loaded: Browsing, abuse: Abuse, deadline_s: float) -> list[Target]:
    health = quantile(loaded.latencies["/health/live/"], 0.99)
    login = quantile(loaded.latencies["login page"], 0.95)
    within = deadline_s + DEADLINE_MARGIN_S
    late = [o for o in abuse.outcomes if o[2] > within]
    unclear = [o for o in abuse.outcomes if o[1] != "200" and not o[4]]
    slowest = max((o[2] for o in abuse.outcomes), default=0.0)
    return [
        Target(
            "/health/live/ p99 under abuse",
            f"< {HEALTH_P99_S:g} s",
            f"{health * 1000:.0f} ms",
            health < HEALTH_P99_S,
        ),
        Target(
            "login page p95 under abuse",
            f"< {LOGIN_P95_S:g} s",
            f"{login * 1000:.0f} ms",
            login < LOGIN_P95_S,
        ),
        Target(
            f"expensive requests ({len(abuse.outcomes)})",
            f"each 200 within {within:g} s or refused clearly",
            f"max {slowest:.1f} s, {len(late)} late, {len(unclear)} unclear",
            not late and not unclear,
        ),
    ]


def abuse_mode(args: argparse.Namespace, env: dict[str, str], port: int, server: Server) -> int:
    """A read-only token of a viewer posts the most expensive allowed requests from
    `--clients` clients while others browse; the browsing before (baseline) and during."""
    log = server.log.with_name(server.log.stem + "-celery.log")
    join_demo_org(args.root, env)
    deadline_s = float(env.get("API_WORK_DEADLINE_S", "20"))
    with celery_worker(args.root, env, log) as worker:
        print(
            f"gunicorn: {server.conf['workers']} workers x {server.conf['threads']} threads "
            f"+ {server.conf['api_threads']} API threads; {os.cpu_count()} cores; the API's "
            "throttles and work budget at their defaults"
        )
        print_load()
        warm_up(worker, args.warm_wait_s, "after load_catalog")
        headers = {
            "Authorization": f"Bearer {abuser_token(args.root, env)}",
            "Content-Type": "application/json",
        }
        print("the largest batches of analysed items one request may send:")
        abuse = Abuse(headers, probe_batch_sizes(port, headers))
        per_row = 2
        print(f"browsing: {per_row} clients a row, baseline for {args.baseline_s:g} s")
        base = browse(port, args.baseline_s, per_row)
        print(
            f"abuse: {args.clients} clients for {args.abuse_s:g} s, each sending in turn: "
            + "; ".join(ABUSE_KINDS)
            + " (a refused request is sent again at once)"
        )
        loaded = browse(port, args.abuse_s, per_row, abuse, args.clients)
        print_browsing(base, loaded)
        print(f"expensive requests (API_WORK_DEADLINE_S {deadline_s:g}):")
        print_abuse(abuse)
    print_load()
    targets = abuse_targets(loaded, abuse, deadline_s)
    print("targets:")
    for t in targets:
        print(f"  {t.name:<34} {t.goal:<42} {t.measured:>28}  {'PASS' if t.ok else 'MISS'}")
    failed = base.failures + loaded.failures
    if failed:
        print(f"{len(failed)} browsing requests not answered 200, first: {failed[0]}")
    return 1 if failed or not all(t.ok for t in targets) else 0


def connection_count() -> int:
    sql = f"select count(*) from pg_stat_activity where datname = '{DB}'"
    return int(psql(sql))


def hold(port: int, seconds: float, keepalive: int, half_open: int) -> dict[str, float]:
    """Hold the connections for `seconds`; sample PostgreSQL and /health/ meanwhile."""
    stop = threading.Event()
    served = [0, 0]  # requests answered, requests failed
    lock = threading.Lock()

    def keep_alive_client() -> None:
        client = Client(port)
        while not stop.is_set():
            try:
                code, _ = client.request("GET", "/health/")
            except OSError:
                code = 0
            with lock:
                served[code != 200] += 1
            stop.wait(1.0)
        client.conn.close()

    def half_open_client() -> None:
        while not stop.is_set():
            try:
                with socket.create_connection((HOST, port), timeout=2) as s:
                    s.sendall(b"GET /en/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                    s.settimeout(seconds)
                    s.recv(1)  # returns when the server drops us
            except OSError:
                stop.wait(0.2)

    workers = [threading.Thread(target=keep_alive_client) for _ in range(keepalive)]
    workers += [threading.Thread(target=half_open_client, daemon=True) for _ in range(half_open)]
    for t in workers:
        t.start()
    peak, health_ms, health_bad = 0, [], 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        peak = max(peak, connection_count())
        started = time.perf_counter()
        try:
            ok = status(port, "/health/") == 200
        except OSError:
            ok = False
        health_ms.append((time.perf_counter() - started) * 1000)
        health_bad += not ok
        time.sleep(1)
    stop.set()
    for t in workers[:keepalive]:
        t.join(timeout=30)
    return {
        "peak_db_connections": peak,
        "health_checks": len(health_ms),
        "health_failures": health_bad,
        "health_max_ms": max(health_ms),
        "keepalive_answered": served[0],
        "keepalive_failed": served[1],
    }


def restart_postgres_and_redis() -> None:
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"], check=True
    )
    subprocess.run(["redis-cli", "-h", HOST, "-p", "6379", "shutdown", "nosave"], check=False)
    server = ["redis-server", "--daemonize", "yes", "--bind", HOST, "--port", "6379"]
    subprocess.run([*server, "--save", "", "--appendonly", "no"], check=True)


def hold_mode(args: argparse.Namespace, port: int, conf: dict[str, object]) -> int:
    threads = int(str(conf["threads"])) + int(str(conf["api_threads"]))
    pool = int(str(conf["workers"])) * threads
    print(
        f"holding {args.keepalive} keep-alive and {args.half_open} half-open connections "
        f"for {args.hold_s} s; database pool = {conf['workers']} workers x "
        f"({conf['threads']} + {conf['api_threads']} API) threads = {pool}"
    )
    figures = hold(port, args.hold_s, args.keepalive, args.half_open)
    for name, value in figures.items():
        print(f"  {name:<22} {value:g}")
    ok = figures["peak_db_connections"] <= pool and figures["health_failures"] == 0
    if args.restart:
        client = Client(port)
        client.login()
        restart_postgres_and_redis()
        up = wait_for(lambda: status(port, "/health/") == 200, seconds=60, what="health")
        page = wait_for(lambda: client.request("GET", CONFIGURE)[0] == 200, seconds=60, what="page")
        print(f"  after restarting PostgreSQL and Redis: /health/ 200 in {up:.1f} s, then")
        print(f"  the configurator page 200 in {page:.1f} s, same session, no manual step")
    print("hold: ok" if ok else "hold: FAILED")
    return 0 if ok else 1


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("mode", choices=["pages", "hold", "api", "planner", "abuse"])
    parser.add_argument("--quick", action="store_true", help="a shorter run: smaller defaults")
    parser.add_argument("--clients", type=int, help="default 8; abuse: 16 abusing clients")
    parser.add_argument("--requests", type=int, help="per page (default 240, --quick 80)")
    parser.add_argument("--workers", type=int, default=2, help="GUNICORN_WORKERS")
    parser.add_argument("--threads", type=int, default=4, help="GUNICORN_THREADS")
    parser.add_argument("--warm-wait-s", type=float, default=120.0, help="0: no wait")
    parser.add_argument("--cold-cards", type=int, help="default 20, --quick 10")
    parser.add_argument(
        "--memory-cards", type=int, help="0: every card page (default), --quick 150"
    )
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--keepalive", type=int, default=200)
    parser.add_argument("--half-open", type=int, default=50)
    parser.add_argument("--hold-s", type=float, default=20.0)
    parser.add_argument("--restart", action="store_true")
    parser.add_argument("--baseline-s", type=float, help="abuse: default 40, --quick 20")
    parser.add_argument("--abuse-s", type=float, help="abuse: default 180, --quick 70")
    args = parser.parse_args()
    defaults = {
        "requests": (240, 80),
        "cold_cards": (20, 10),
        "memory_cards": (0, 150),
        "baseline_s": (40.0, 20.0),
        "abuse_s": (180.0, 70.0),
    }
    if args.clients is None:
        args.clients = 16 if args.mode == "abuse" else 8
    for name, (full, quick) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    args.root = args.root.resolve()
    return args


def main() -> int:
    args = arguments()
    port = free_port()
    env = server_env(port, args.workers, args.threads, throttles=args.mode == "abuse")
    with single_run():
        try:
            release(args.root, env)
            with gunicorn(args.root, env, port, Path(f"/tmp/rightsize-bench-{port}.log")) as server:
                if args.mode == "pages":
                    return pages_mode(args, env, port, server)
                if args.mode == "api":
                    return api_mode(args, env, port, server)
                if args.mode == "planner":
                    return planner_mode(args, env, port, server)
                if args.mode == "abuse":
                    return abuse_mode(args, env, port, server)
                return hold_mode(args, port, server.conf)
        finally:
            psql(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
            flush_redis()


if __name__ == "__main__":
    raise SystemExit(main())
