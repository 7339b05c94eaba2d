"""`load.py hold`: many keep-alive and half-open connections held at once, PostgreSQL's
connection count and /health/ sampled meanwhile; with --restart, PostgreSQL and Redis
restarted under the server (benchmarks/load.py's docstring describes the run)."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import threading
import time

from .client import Client
from .scenarios import CONFIGURE
from .server import DB, HOST, psql, status, wait_for


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
