"""`load.py planner`: the capacity planner's worked example POSTed to the plans API and
the planner page with the same query, against the trivial view (benchmarks/load.py's
docstring describes the run)."""

from __future__ import annotations

import argparse
import json
import time

from .accounts import PLANNER_ORG, api_token, join_demo_org, json_headers
from .client import Client, exit_status, logged_in_client, measure_rows
from .scenarios import TRIVIAL, Page
from .server import Server, print_load, workers_banner
from .worker import warmed_worker

PLANNER_EXAMPLE = {"model": "qwen3-32b", "users": 200, "n_plus_one": True}
PLANNER_QUERY = "model=qwen3-32b&users=200&n_plus_one=on"
PLANS_API = f"/api/v1/o/{PLANNER_ORG}/plans/"


def cold_plan(client: Client, headers: dict[str, str]) -> int:
    """The first plan, which builds the curves (cold), timed and printed with its cheapest
    plan; returns 1 when it was not answered 200, else 0."""
    started = time.perf_counter()
    code, text = client.request("POST", PLANS_API, json.dumps(PLANNER_EXAMPLE), **headers)
    cold = time.perf_counter() - started
    cheapest = (json.loads(text).get("cheapest") or {}) if code == 200 else {}
    print(
        f"first plan (cold curves): {cold * 1000:.0f} ms, answered {code}; cheapest: "
        f"{cheapest.get('label')} TP{cheapest.get('tensor_parallel')} x "
        f"{cheapest.get('replicas')} replicas, {cheapest.get('monthly_usd')} USD/month"
    )
    return 0 if code == 200 else 1


def planner_mode(args: argparse.Namespace, env: dict[str, str], port: int, server: Server) -> int:
    """The planner on the production server: the worked example through the API and
    the planner page, against the trivial view."""
    join_demo_org(args.root, env)
    with warmed_worker(args.root, env, server, args.warm_wait_s, workers_banner(server)):
        headers = json_headers(api_token(args.root, env))
        clients = [logged_in_client(port) for _ in range(args.clients)]
        # After the first plan the curves are in the sizing cache: the rows below are warm.
        failed = cold_plan(clients[0], headers)
        body = json.dumps(PLANNER_EXAMPLE)
        page = f"/en/o/{PLANNER_ORG}/planner/?{PLANNER_QUERY}"
        rows = [
            TRIVIAL,
            Page("API plan, worked example", (PLANS_API,), headers, None, (body,)),
            Page("planner page, same query", (page,)),
        ]
        print(f"{args.requests} requests per row from {len(clients)} clients")
        results = measure_rows(clients, rows, args.requests)
        failed += sum(result.errors for result in results)
    print_load()
    return exit_status(failed)
