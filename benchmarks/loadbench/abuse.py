"""`load.py abuse`: a viewer's read-only token sends the most expensive requests the API
allows, from many clients at once, while others browse; the browsing before and during,
the expensive requests by outcome, and the targets (benchmarks/load.py's docstring
describes the run). The throttles and the work budget stay at their production defaults."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from .accounts import abuser_token, join_demo_org, json_headers
from .client import Client, logged_in_client, quantile
from .scenarios import (
    API_ESTIMATE,
    CARD,
    MODEL,
    VARIED_CARDS,
    VARIED_QUANTS,
    Target,
    configurator_variants,
    print_targets,
)
from .server import Server, print_load
from .worker import warmed_worker

# An ordinary model and the catalog's deepest (126 layers: each estimate costs 1.97 units).
ABUSE_MODELS = (MODEL, "llama-3-1-405b-instruct")
ABUSE_KINDS = ("batch, ordinary model", "batch, deepest model", "card sweep", "model sweep")
DEADLINE_MARGIN_S = 2.0  # past API_WORK_DEADLINE_S: the last item, the answer's encoding
HEALTH_P99_S, LOGIN_P95_S = 1.0, 2.0
PROBE_ITEMS = 100  # the probe batch, refused with its price: the largest batch follows


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
        sender = (port, abuse, n % len(ABUSE_KINDS), stop)
        threads.append(threading.Thread(target=abuse_client, args=sender, daemon=True))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=180)
    if any(t.is_alive() for t in threads):
        raise SystemExit("abuse: clients still waiting 180 s after the end")
    return seen


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
    join_demo_org(args.root, env)
    deadline_s = float(env.get("API_WORK_DEADLINE_S", "20"))
    banner = (
        f"gunicorn: {server.conf['workers']} workers x {server.conf['threads']} threads "
        f"+ {server.conf['api_threads']} API threads; {os.cpu_count()} cores; the API's "
        "throttles and work budget at their defaults"
    )
    with warmed_worker(args.root, env, server, args.warm_wait_s, banner):
        headers = json_headers(abuser_token(args.root, env))
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
    print_targets(targets, (34, 42, 28))
    failed = base.failures + loaded.failures
    if failed:
        print(f"{len(failed)} browsing requests not answered 200, first: {failed[0]}")
    return 1 if failed or not all(t.ok for t in targets) else 0
