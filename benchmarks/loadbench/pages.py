"""`load.py pages`: the warm-up, first visits of cold card pages, the workers' memory after
every card page, the pages table against the login page, and a catalog edit; then the page
targets (benchmarks/load.py's docstring describes each step)."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from .accounts import PLANNER_ORG, demo_org_work
from .client import Client, describe_failures, drive, exit_status, logged_in_client, measure
from .scenarios import (
    CARD,
    CONFIGURE,
    HTMX,
    LOGIN,
    MODEL,
    POPULAR,
    TRIVIAL,
    Page,
    Target,
    configurator_variants,
    popular_url,
    print_targets,
)
from .server import (
    DB,
    Server,
    describe_rss,
    manage,
    print_load,
    psql,
    replacements,
    worker_pids,
    workers_rss,
)
from .worker import CeleryWorker, warm_up, warmed_worker

# The page targets.
CONFIGURATOR_PCT, VARIED_PCT, HTMX_PCT, EXPLORE_PCT = 25.0, 15.0, 50.0, 30.0
CARD_AFTER_EDIT_MS = 300.0
WORKER_RSS_MB = 200.0  # decimal megabytes
EDIT_VISITS = 5  # card pages timed right after the edit, and again after the warm-up
EDITED_CARD = "nvidia-a100-80gb-pcie"  # a seeded card (catalog/data/accelerators.json)


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
        TRIVIAL,
        Page("health (database, cache, broker)", ("/health/",)),
        LOGIN,
        Page("home", ("/en/",)),
        Page("configurator, full page", (CONFIGURE,), min_pct_of_login=CONFIGURATOR_PCT),
        *(
            Page(f"configurator, full, {label}", (popular_url(m, c, q),), {}, CONFIGURATOR_PCT)
            for label, m, c, q in POPULAR
        ),
        Page(f"configurator, full, varied ({len(full)} URLs)", full, {}, VARIED_PCT),
        Page("configurator, HTMX results part", (CONFIGURE,), HTMX, HTMX_PCT),
        Page(f"configurator, HTMX, varied ({len(part)} URLs)", part, HTMX, HTMX_PCT),
        Page("model on every card", (f"/en/models/{MODEL}/gpus/",), {}, EXPLORE_PCT),
        Page("card across every model", (f"/en/gpus/{CARD}/",), {}, EXPLORE_PCT),
        Page("compare, 3 columns", (compare,)),
    ]


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


def pages_mode(args: argparse.Namespace, env: dict[str, str], port: int, server: Server) -> int:
    """Warm-up, cold cards, memory, the pages table, the catalog edit; then the targets."""
    banner = (
        f"gunicorn: {server.conf['workers']} workers ({len(worker_pids(server.pid))} "
        f"running) x {server.conf['threads']} threads, max_requests "
        f"{server.conf['max_requests']}; {os.cpu_count()} cores; celery worker "
        f"--concurrency {env.get('CELERY_CONCURRENCY', '2')}; logs {server.log}, "
        f"{server.celery_log}"
    )
    # The bench user signs in as an admin of an organization with offers and saved work.
    print(f"organization {PLANNER_ORG}: {demo_org_work(args.root, env)}")
    with warmed_worker(args.root, env, server, args.warm_wait_s, banner) as worker:
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
    print_targets(targets, (44, 28, 12))
    return exit_status(failed)
