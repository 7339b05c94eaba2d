from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from sizing_site.celery import app
from sizing_site.core.tasks import ping
from tests.celery_worker import celery_worker

needs_redis = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="REDIS_URL is not set: no real broker to test"
)


def test_celery_is_configured_for_json_only_and_time_limits() -> None:
    assert app.conf.accept_content == ["json"]
    assert app.conf.task_serializer == "json"
    assert app.conf.result_serializer == "json"
    assert app.conf.task_time_limit == 300
    assert app.conf.task_soft_time_limit == 240
    assert app.conf.task_acks_late is False
    assert ping.acks_late is True  # idempotent, so it may be redelivered


def test_ping_runs_in_process_without_redis(settings: object) -> None:
    if os.environ.get("REDIS_URL"):
        pytest.skip("eager mode is only the default without REDIS_URL")
    assert ping.delay().get(timeout=5) == "pong"


@pytest.fixture
def worker_queue() -> Iterator[str]:
    """A real `celery worker` process on the real Redis broker, on a queue of its own."""
    with celery_worker() as queue:
        yield queue


@needs_redis
@pytest.mark.redis
def test_a_real_worker_answers_ping_over_redis(worker_queue: str) -> None:
    started = time.monotonic()
    result = ping.apply_async(queue=worker_queue)
    assert result.get(timeout=60) == "pong"
    assert time.monotonic() - started < 60
