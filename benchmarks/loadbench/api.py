"""`load.py api`: POST /api/v1/estimate/ against the configurator's HTMX results part for
the same setups (p50 ratio), then one client's batch of 100 setups nothing sized before
(benchmarks/load.py's docstring describes the run)."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence

from .accounts import api_token, json_headers
from .client import Client, PageResult, exit_status, logged_in_client, measure_rows
from .scenarios import (
    API_ESTIMATE,
    CARD,
    CONFIGURE,
    HTMX,
    MODEL,
    TRIVIAL,
    VARIED_CARDS,
    VARIED_QUANTS,
    Page,
    Target,
    api_items,
    configurator_variants,
    print_targets,
)
from .server import Server, print_load, workers_banner
from .worker import warmed_worker

BATCH = 100  # items in one batch request (under 1 s on this machine's 2 cores)
BATCH_RUNS = 10
BATCH_CTX = (3072, 6144, 12288, 24576, 49152)  # 4 cards x 5 contexts x 5 weights = 100
API_P50_LIMIT = 2.0  # one request's p50 at most 2x the configurator's results part


def api_rows(headers: dict[str, str]) -> list[tuple[Page, int | None]]:
    """The one-request rows, each with the index of the row its p50 is held against (the
    configurator's results part for the same setups), if any."""
    varied, items = configurator_variants(), api_items()
    one = json.dumps({"model": MODEL, "accelerator": CARD, "quant": "Q4_K_M", "ctx": 8192})
    return [
        (TRIVIAL, None),
        (Page("configurator, HTMX results part", (CONFIGURE,), HTMX), None),
        (Page("API estimate, same setup", (API_ESTIMATE,), headers, None, (one,)), 1),
        (Page(f"configurator, HTMX, varied ({len(varied)})", tuple(varied), HTMX), None),
        (
            Page(
                f"API estimate, varied ({len(items)})",
                (API_ESTIMATE,),
                headers,
                None,
                tuple(items),
            ),
            3,
        ),
    ]


def p50_targets(
    rows: Sequence[tuple[Page, int | None]], results: Sequence[PageResult]
) -> list[Target]:
    """Each API row's p50 as a multiple of its configurator row's, against API_P50_LIMIT."""
    targets = []
    for (page, part), result in zip(rows, results, strict=True):
        if part is None:
            continue
        ratio = result.p50_ms / results[part].p50_ms
        goal = f"p50 <= {API_P50_LIMIT:g}x {rows[part][0].name}"
        targets.append(Target(page.name, goal, f"{ratio:.2f}x", ratio <= API_P50_LIMIT))
    return targets


def batch_runs(client: Client, headers: dict[str, str]) -> tuple[Target, int]:
    """One batch of BATCH setups posted BATCH_RUNS + 1 times; the first is cold. Returns
    the target (every run under 1 s) and the runs not answered 200 in full."""
    # Setups none of the one-request rows sized (other contexts): the first run is cold.
    batch = json.dumps(
        [
            {"model": MODEL, "accelerator": card, "quant": quant, "ctx": ctx}
            for card in VARIED_CARDS
            for ctx in BATCH_CTX
            for quant in VARIED_QUANTS
        ][:BATCH]
    )
    times, failed = [], 0
    for _ in range(BATCH_RUNS + 1):
        started = time.perf_counter()
        code, text = client.request("POST", API_ESTIMATE, batch, **headers)
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
    target = Target(f"batch of {BATCH}", "every run < 1 s", f"{slowest * 1000:.0f} ms", slowest < 1)
    return target, failed


def api_mode(args: argparse.Namespace, env: dict[str, str], port: int, server: Server) -> int:
    """The API figures on the production server: one estimate against the
    configurator's HTMX results part for the same setups (p50 ratio), and a batch of 100."""
    with warmed_worker(args.root, env, server, args.warm_wait_s, workers_banner(server)):
        headers = json_headers(api_token(args.root, env))
        clients = [logged_in_client(port) for _ in range(args.clients)]
        rows = api_rows(headers)
        print(f"one request: {args.requests} requests per row from {len(clients)} clients")
        results = measure_rows(clients, [page for page, _ in rows], args.requests)
        failed = sum(result.errors for result in results)
        targets = p50_targets(rows, results)
        batch, errors = batch_runs(clients[0], headers)
        targets.append(batch)
        failed += errors
    print_load()
    print_targets(targets, (44, 50, 8))
    return exit_status(failed)
