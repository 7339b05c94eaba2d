"""Load benchmark of the production command: gunicorn with gunicorn.conf.py on PostgreSQL and
Redis, driven over real sockets on 127.0.0.1.

    python benchmarks/load.py pages [--clients 8] [--requests 240]
    python benchmarks/load.py hold [--keepalive 200] [--half-open 50] [--hold-s 20] [--restart]

Both modes create a scratch database (rightsize_bench, dropped at the end) on the local
PostgreSQL, use Redis database 9, run the release step (migrate, collectstatic,
load_catalog), add a bench user and start gunicorn with the repository's configuration.

pages: for each main page, `--clients` keep-alive clients send `--requests` requests in all;
prints requests/s, p50 and p95, and each page's p50 as a multiple of the trivial view's
(/health/live/: no database, no template).

hold: `--keepalive` clients each keep a connection open and send a request every second,
while `--half-open` clients send half a request and hold (reconnecting when dropped), for
`--hold-s` seconds. Checks that PostgreSQL's connection count for the scratch database stays
at or under gunicorn's workers x threads and that /health/ keeps answering. With
--restart it then restarts PostgreSQL and Redis (this affects everything else using them)
and checks that pages come back with no manual step.

Everything is bounded: request counts, --hold-s, and a deadline on each wait.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import runpy
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
HOST = "127.0.0.1"
DB = "rightsize_bench"
REDIS_DB = 9
USER, PASSWORD = "bench", "bench-pw-123-load"
MODEL, CARD = "llama-3-1-8b-instruct", "nvidia-h100-sxm5-80gb"
CONFIGURE = f"/en/models/{MODEL}/on/{CARD}/?quant=Q4_K_M&ctx=8192"
PAGES: list[tuple[str, str, dict[str, str]]] = [
    ("trivial view (/health/live/)", "/health/live/", {}),
    ("health (database, cache, broker)", "/health/", {}),
    ("login page", "/en/accounts/login/", {}),
    ("home", "/en/", {}),
    ("configurator, full page", CONFIGURE, {}),
    ("configurator, results (HTMX)", CONFIGURE, {"HX-Request": "true"}),
    ("model on every card", f"/en/models/{MODEL}/gpus/", {}),
    ("card across every model", f"/en/gpus/{CARD}/", {}),
    (
        "compare, 3 columns",
        f"/en/compare/?c1={MODEL}:{CARD}:Q4_K_M:1&c2={MODEL}:nvidia-h100-pcie-80gb:Q4_K_M:2"
        f"&c3=qwen3-8b:{CARD}",
        {},
    ),
]


def psql(sql: str, database: str = "postgres") -> str:
    command = ["psql", "-h", HOST, "-U", "postgres", "-d", database, "-Atqc", sql]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def server_env(port: int) -> dict[str, str]:
    return {
        **os.environ,
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
        "LOG_LEVEL": "WARNING",  # one line per request would time the log, not the pages
    }


def release(env: dict[str, str]) -> None:
    """The release step of `make serve`, plus the bench user."""
    psql(f"DROP DATABASE IF EXISTS {DB}")
    psql(f"CREATE DATABASE {DB}")
    for args in (["migrate"], ["collectstatic", "--noinput"], ["load_catalog"]):
        subprocess.run(
            [PY, "manage.py", *args, "--verbosity", "0"],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    create_user = (
        "from django.contrib.auth.models import User; "
        f"User.objects.create_user({USER!r}, password={PASSWORD!r})"
    )
    subprocess.run([PY, "manage.py", "shell", "-c", create_user], cwd=ROOT, env=env, check=True)


@contextmanager
def gunicorn(env: dict[str, str], port: int, log: Path) -> Iterator[dict[str, object]]:
    """The production web command; yields its configuration as gunicorn reads it."""
    # Read in this process: the server's environment differs only in GUNICORN_BIND.
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    command = [PY, "-m", "gunicorn", "-c", "gunicorn.conf.py", "sizing_site.wsgi"]
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    try:
        wait_for(lambda: status(port, "/health/") == 200, seconds=60, what="gunicorn start")
        yield conf
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()


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
    errors: int


def drive(clients: list[Client], path: str, headers: dict[str, str], total: int) -> PageResult:
    """`total` requests shared by the clients, all at once; latency per request."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    per_client = max(1, total // len(clients))

    def run(client: Client) -> None:
        for _ in range(per_client):
            started = time.perf_counter()
            code, _ = client.request("GET", path, **headers)
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                errors[0] += code != 200

    threads = [threading.Thread(target=run, args=(c,)) for c in clients]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    seconds = time.perf_counter() - started
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))]
    return PageResult(
        len(latencies), seconds, statistics.median(latencies) * 1000, p95 * 1000, errors[0]
    )


def pages_mode(args: argparse.Namespace, port: int, conf: dict[str, object]) -> int:
    clients = [Client(port) for _ in range(args.clients)]
    for client in clients:
        client.login()
    print(
        f"gunicorn: {conf['workers']} workers x {conf['threads']} threads on "
        f"{os.cpu_count()} cores; {args.clients} keep-alive clients, {args.requests} "
        "requests per page after 2 warm-up requests per client"
    )
    print(f"  {'page':<36} {'req/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p50 / trivial':>14}")
    trivial_p50 = 0.0
    failed = 0
    for name, path, headers in PAGES:
        drive(clients, path, headers, 2 * len(clients))  # warm caches and connections
        result = drive(clients, path, headers, args.requests)
        trivial_p50 = trivial_p50 or result.p50_ms
        rate = result.requests / result.seconds
        ratio = result.p50_ms / trivial_p50
        print(
            f"  {name:<36} {rate:7.1f} {result.p50_ms:8.1f} {result.p95_ms:8.1f} {ratio:13.1f}x"
            + (f"  ({result.errors} not 200)" if result.errors else "")
        )
        failed += result.errors
    return 1 if failed else 0


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
    redis = ["redis-server", "--daemonize", "yes", "--bind", HOST, "--port", "6379"]
    subprocess.run([*redis, "--save", "", "--appendonly", "no"], check=True)


def hold_mode(args: argparse.Namespace, port: int, conf: dict[str, object]) -> int:
    pool = int(str(conf["workers"])) * int(str(conf["threads"]))
    print(
        f"holding {args.keepalive} keep-alive and {args.half_open} half-open connections "
        f"for {args.hold_s} s; database pool = {conf['workers']} workers x "
        f"{conf['threads']} threads = {pool}"
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["pages", "hold"])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=240)
    parser.add_argument("--keepalive", type=int, default=200)
    parser.add_argument("--half-open", type=int, default=50)
    parser.add_argument("--hold-s", type=float, default=20.0)
    parser.add_argument("--restart", action="store_true")
    args = parser.parse_args()
    port = free_port()
    env = server_env(port)
    release(env)
    try:
        with gunicorn(env, port, Path(f"/tmp/rightsize-bench-{port}.log")) as conf:
            if args.mode == "pages":
                return pages_mode(args, port, conf)
            return hold_mode(args, port, conf)
    finally:
        psql(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


if __name__ == "__main__":
    raise SystemExit(main())
