"""The clients: keep-alive HTTP connections with their own cookies, signed in as the bench
user or not, and the timed rounds of requests they share (drive, measure)."""

from __future__ import annotations

import http.client
import re
import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from .scenarios import Page
from .server import HOST, PASSWORD, USER


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
    return PageResult(
        len(latencies),
        seconds,
        statistics.median(latencies) * 1000,
        quantile(latencies, 0.95) * 1000,
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


def quantile(values: Sequence[float], q: float) -> float:
    """The `q` quantile, nearest rank below: sorted(values)[int(n * q)], capped at the last."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def measure_rows(clients: Sequence[Client], rows: Sequence[Page], total: int) -> list[PageResult]:
    """Each row measured in turn and printed: req/s, p50, p95 and p50 as a multiple of the
    first row's (the trivial view's)."""
    print(f"  {'row':<40} {'req/s':>7} {'p50 ms':>7} {'p95 ms':>7} {'p50/triv':>9}")
    results: list[PageResult] = []
    for row in rows:
        result = measure(clients, row, total)
        results.append(result)
        print(
            f"  {row.name:<40} {result.rate:7.1f} {result.p50_ms:7.1f} {result.p95_ms:7.1f} "
            f"{result.p50_ms / results[0].p50_ms:8.1f}x" + describe_failures(result.failures)
        )
    return results


def exit_status(failed: int) -> int:
    """1 when a request was not answered 200 (said so), else 0."""
    if failed:
        print(f"{failed} requests not answered 200")
    return 1 if failed else 0
