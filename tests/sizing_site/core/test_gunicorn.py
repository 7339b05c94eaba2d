from __future__ import annotations

import os
import runpy
import select
import socket
import subprocess
import sys
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from sizing_site.core import gunicorn_worker
from sizing_site.core.gunicorn_worker import BoundedSocket

ROOT = Path(__file__).resolve().parents[3]
CONF = ROOT / "gunicorn.conf.py"


def load_conf(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, Any]:
    for name in list(os.environ):
        if name.startswith("GUNICORN_") or name == "DB_CONNECTION_BUDGET":
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(CONF))


def test_the_defaults_stay_inside_the_database_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    conf = load_conf(monkeypatch)
    cores = os.cpu_count() or 1
    assert conf["workers"] == min(2 * cores, 8)
    assert (conf["threads"], conf["api_threads"]) == (4, 2)
    # At most 8 x (4 + 2) = 48 connections, under the 64 budget and PostgreSQL's 97 usable.
    assert conf["workers"] * (conf["threads"] + conf["api_threads"]) <= 48
    assert conf["bind"] == ["127.0.0.1:8000"]
    assert conf["worker_class"] == "sizing_site.core.gunicorn_worker.BoundedThreadWorker"
    assert (conf["timeout"], conf["graceful_timeout"], conf["keepalive"]) == (30, 30, 5)
    assert (conf["max_requests"], conf["max_requests_jitter"]) == (2000, 200)
    assert (conf["worker_connections"], conf["backlog"]) == (250, 512)
    assert conf["limit_request_line"] == 4094
    assert conf["limit_request_fields"] == 50
    assert conf["limit_request_field_size"] == 8190


def test_every_value_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    conf = load_conf(
        monkeypatch,
        GUNICORN_BIND="0.0.0.0:9000",
        GUNICORN_WORKERS="3",
        GUNICORN_THREADS="5",
        GUNICORN_MAX_REQUESTS="10",
    )
    assert conf["bind"] == ["0.0.0.0:9000"]
    assert (conf["workers"], conf["threads"], conf["max_requests"]) == (3, 5, 10)


def test_more_threads_than_the_budget_stop_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    # 9 workers x (6 threads + 2 API threads) = 72 connections > 64.
    with pytest.raises(SystemExit, match="= 72 database connections, over DB_CONNECTION"):
        load_conf(monkeypatch, GUNICORN_WORKERS="9", GUNICORN_THREADS="6")


def test_a_value_that_is_not_a_number_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit, match="GUNICORN_THREADS must be an integer"):
        load_conf(monkeypatch, GUNICORN_THREADS="four")


@pytest.fixture
def bounded_pair(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[socket.socket, socket.socket]]:
    monkeypatch.setattr(gunicorn_worker, "CLIENT_TIMEOUT_S", 0.2)
    server, client = socket.socketpair()
    server.__class__ = BoundedSocket
    server.setblocking(True)
    yield server, client
    server.close()
    client.close()


def test_a_stalled_client_reads_as_gone_after_the_timeout(
    bounded_pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = bounded_pair
    client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # and then nothing more
    assert server.recv(4096) == b"GET / HTTP/1.1\r\nHost: x\r\n"
    started = time.monotonic()
    assert server.recv(4096) == b""
    assert 0.15 < time.monotonic() - started < 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(port: int, path: str, timeout: float) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return data


@pytest.fixture
def gunicorn_port(tmp_path: Path) -> Iterator[int]:
    """The real config: one process, two threads, short timeouts so the test is quick."""
    yield from serving(tmp_path)


def serving(
    tmp_path: Path, *, stderr: Any = subprocess.DEVNULL, **env: str
) -> Generator[int, None, None]:
    """gunicorn with the real config (and `env`) on a free port, until the generator ends."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "1",
        "GUNICORN_THREADS": "2",
        "GUNICORN_CLIENT_TIMEOUT": "1",
        "GUNICORN_KEEPALIVE": "2",
        "GUNICORN_REQUEST_HEAD_DEADLINE": "3",
        **env,
    }
    command = [sys.executable, "-m", "gunicorn", "-c", str(CONF), "sizing_site.wsgi"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                get(port, "/health/live/", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_half_open_clients_do_not_stall_the_server(gunicorn_port: int) -> None:
    # Ten clients send half a request and hold: five times the two threads there are.
    half_open = [socket.create_connection(("127.0.0.1", gunicorn_port)) for _ in range(10)]
    try:
        for s in half_open:
            s.sendall(b"GET /health/live/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(0.5)
        started = time.monotonic()
        answer = get(gunicorn_port, "/health/live/", timeout=10)
        assert answer.startswith(b"HTTP/1.1 200")
        assert time.monotonic() - started < 1  # no thread was waiting on them
        for s in half_open:
            s.settimeout(10)
            assert s.recv(1024) == b""  # dropped after 2 s of silence, nothing answered
    finally:
        for s in half_open:
            s.close()


def test_api_requests_that_hold_their_threads_leave_the_pages_theirs(tmp_path: Path) -> None:
    """One thread for the pages, one for the API: an API request stuck on its body holds
    the API's thread, and the pages and health checks are answered meanwhile."""
    env = {"GUNICORN_THREADS": "1", "GUNICORN_API_THREADS": "1", "GUNICORN_CLIENT_TIMEOUT": "5"}
    for port in serving(tmp_path, **env):
        with socket.create_connection(("127.0.0.1", port)) as stuck:
            # A chunked body is read before any view (sizing_site.body_limits): the first
            # chunk, then silence, holds the API's one thread for the client timeout.
            stuck.sendall(
                b"POST /api/v1/estimate/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
                b"2\r\n[1\r\n"
            )
            time.sleep(0.5)
            started = time.monotonic()
            assert get(port, "/health/live/", timeout=10).startswith(b"HTTP/1.1 200")
            assert get(port, "/en/accounts/login/", timeout=10).startswith(b"HTTP/1.1 200")
            assert time.monotonic() - started < 2  # not after the 5 s the API's thread waits
            # Another API request waits for the API's thread.
            assert get(port, "/api/v1/schema/", timeout=10).startswith(b"HTTP/1.1 403")
            assert time.monotonic() - started > 3


def test_a_trickling_client_is_dropped_at_the_head_deadline(gunicorn_port: int) -> None:
    with socket.create_connection(("127.0.0.1", gunicorn_port)) as s:
        started = time.monotonic()
        s.sendall(b"GET /health/live/ HTTP/1.1\r\n")
        dropped = False
        for _ in range(20):  # a header line every 0.5 s: never silent for the 2 s keepalive
            readable, _, _ = select.select([s], [], [], 0.5)
            if readable:  # the server's close, seen as end of input
                dropped = s.recv(1024) == b""
                break
            s.sendall(b"X-Slow: 1\r\n")
        waited = time.monotonic() - started
    assert dropped
    assert 3 <= waited < 5  # the 3 s head deadline, checked as the next line arrives


def test_a_request_sent_in_pieces_is_still_served(gunicorn_port: int) -> None:
    with socket.create_connection(("127.0.0.1", gunicorn_port), timeout=10) as s:
        for piece in (b"GET /health/live/ HT", b"TP/1.1\r\nHost: 127.0.0.1\r\n", b"\r\n"):
            s.sendall(piece)
            time.sleep(0.3)
        assert s.recv(1024).startswith(b"HTTP/1.1 200")
        # and the next request on the same kept-alive connection, in two pieces too
        s.sendall(b"GET /health/live/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(0.3)
        s.sendall(b"Connection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        assert data.startswith(b"HTTP/1.1 200")
        assert data.endswith(b"ok")


def test_the_access_log_and_the_error_stream_carry_no_share_token(tmp_path: Path) -> None:
    token = "Zq3-secret_share-token-0123456789abcdefghij"
    access, errors = tmp_path / "access.log", tmp_path / "stderr.log"
    with errors.open("w") as stream:
        server = serving(tmp_path, stderr=stream, GUNICORN_ACCESSLOG=str(access))
        port = next(server)
        # Without the language prefix: redirected (302) before any database is read.
        for path in (f"/r/{token}/", f"/s/plan/{token}/"):
            assert get(port, path, timeout=10).startswith(b"HTTP/1.1 302"), path
        server.close()  # stops gunicorn, which flushes its logs
    written = access.read_text()
    assert '"GET /r/<token>/ HTTP/1.1" 302' in written
    assert '"GET /s/plan/<token>/ HTTP/1.1" 302' in written
    assert "GET /r/<token>/ 302" in errors.read_text()  # our request log, on stderr
    assert token not in written and token not in errors.read_text()
