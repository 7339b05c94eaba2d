"""The Procfile's Celery worker beside gunicorn, and the warm-up wait: until what
load_catalog (or a catalog edit) queued has run."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis
from celery import Celery

from .server import PY, Server, print_load, process, wait_for


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


@contextmanager
def warmed_worker(
    root: Path, env: dict[str, str], server: Server, warm_wait_s: float, banner: str
) -> Iterator[CeleryWorker]:
    """The Celery worker, once it has run what load_catalog queued (at most `warm_wait_s`);
    `banner` (the processes measured) and the machine's load printed before the wait."""
    with celery_worker(root, env, server.celery_log) as worker:
        print(banner)
        print_load()
        warm_up(worker, warm_wait_s, "after load_catalog")
        yield worker
