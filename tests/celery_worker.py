"""A real `celery worker` process on the real broker, on a queue of its own, for tests."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def celery_worker(env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Start a solo-pool worker listening only to a fresh queue; yield the queue's name.

    Its own queue keeps a test's tasks away from any other worker on the same broker.
    Output goes to /dev/null: an unread pipe would stall the worker once it fills.
    """
    queue = f"test-{uuid.uuid4().hex[:8]}"
    command = [sys.executable, "-m", "celery", "-A", "sizing_site", "worker", "-Q", queue]
    command += ["--pool", "solo", "--without-gossip", "--without-mingle", "--loglevel", "INFO"]
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield queue
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
