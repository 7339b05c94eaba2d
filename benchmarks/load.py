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

pages signs the clients in as the bench user, an admin of seed_demo's organization `demo`,
which gets its own negotiated offers (its price feed: H100 SXM and RTX 4090 instances,
through org_feed_save and offers_upsert) and a saved configuration of each popular pair
(saved_configuration_create), as a member of an organization with offers and saved work
sees the pages. It also starts a Celery worker as the Procfile does, then:
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
   multiple of the trivial view's (/health/live/: no database, no template). Besides
   Llama 3.1 8B on an H100 SXM, the configurator's full page of the popular pairs
   (GLM-4.5-Air on an H100 SXM at Q4_K_M and 8K context, Qwen3-30B-A3B on an RTX 4090 at
   the page's defaults). "varied" rows cycle over distinct configurator URLs (4 cards x 6
   contexts x 5 weights formats x 4 GPU counts, half for the full page, half for the HTMX
   part), so a result cache cannot answer every request from one entry. Targets, as a %
   of the login page's requests/s: the full page >= 25 % (each popular pair too), its
   varied row >= 15 %, the HTMX part (fixed and varied) >= 50 %, both explore pages >= 30 %.
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

This file parses the command line and runs a mode; the modes and their parts are the
modules of benchmarks/loadbench/ (one per mode, the server processes, the clients).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from loadbench.abuse import abuse_mode
from loadbench.api import api_mode
from loadbench.hold import hold_mode
from loadbench.pages import pages_mode
from loadbench.planner import planner_mode
from loadbench.server import (
    DB,
    flush_redis,
    free_port,
    gunicorn,
    psql,
    release,
    server_env,
    single_run,
)

MODES = {"pages": pages_mode, "api": api_mode, "planner": planner_mode, "abuse": abuse_mode}


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
                if args.mode == "hold":
                    return hold_mode(args, port, server.conf)
                return MODES[args.mode](args, env, port, server)
        finally:
            psql(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
            flush_redis()


if __name__ == "__main__":
    raise SystemExit(main())
