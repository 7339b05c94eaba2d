"""The production processes of a run: the scratch PostgreSQL database and Redis database,
the release step, gunicorn as gunicorn.conf.py configures it, and its workers as /proc
sees them. One run at a time: runs share the database and Redis."""

from __future__ import annotations

import fcntl
import http.client
import os
import runpy
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import redis

PY = sys.executable
HOST = "127.0.0.1"
DB = "rightsize_bench"
REDIS_DB = 9
LOCK = Path("/tmp/rightsize-load-bench.lock")
USER, PASSWORD = "bench", "bench-pw-123-load"


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

    @property
    def celery_log(self) -> Path:
        """Where the run's Celery worker, if any, writes its log: beside gunicorn's."""
        return self.log.with_name(self.log.stem + "-celery.log")


@contextmanager
def gunicorn(root: Path, env: dict[str, str], port: int, log: Path) -> Iterator[Server]:
    """The production web command, once /health/ answers."""
    with mock.patch.dict(os.environ, env, clear=True):
        conf = runpy.run_path(str(root / "gunicorn.conf.py"))
    command = [PY, "-m", "gunicorn", "-c", "gunicorn.conf.py", "sizing_site.wsgi"]
    with process(command, root, env, log) as pid:
        wait_for(lambda: status(port, "/health/") == 200, seconds=60, what="gunicorn start")
        yield Server(conf, pid, log)


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


def print_load() -> None:
    """The machine's load average: the other processes the figures shared the cores with."""
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


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


def workers_banner(server: Server) -> str:
    """gunicorn's workers and threads and the machine's cores: what the figures ran on."""
    return (
        f"gunicorn: {server.conf['workers']} workers x {server.conf['threads']} threads; "
        f"{os.cpu_count()} cores"
    )
