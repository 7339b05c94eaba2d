"""`make run` (runserver) prints each request once: our request log's line (with the
request id, status and duration), not also runserver's own line for it. Static files,
which runserver serves before any middleware, keep runserver's line, their only one.

A real development server (Django's WSGIServer and WSGIRequestHandler, the static files
handler in front, as runserver has it) answers real requests on a free port, with logging
configured as settings configure it."""

from __future__ import annotations

import functools
import io
import logging
import logging.config
import threading
import urllib.request
from collections.abc import Iterator

import pytest
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer
from django.core.wsgi import get_wsgi_application

from sizing_site.core.logconfig import RequestLineOnce, logging_config


@pytest.fixture
def dev_log() -> Iterator[io.StringIO]:
    """Both of runserver's outputs (the console and django.server's handler) in one buffer;
    the previous configuration is put back afterwards."""
    _app()  # first: django.setup() configures logging from settings again
    stream = io.StringIO()
    config = logging_config(log_format="text", level="INFO")
    config["handlers"]["console"]["stream"] = stream
    config["handlers"]["django.server"]["stream"] = stream
    root, server = logging.getLogger(), logging.getLogger("django.server")
    saved = root.handlers[:], root.level, server.handlers[:], server.filters[:]
    logging.config.dictConfig(config)
    yield stream
    root.handlers[:], _, server.handlers[:], server.filters[:] = saved
    root.setLevel(saved[1])


@functools.cache
def _app() -> StaticFilesHandler:
    return StaticFilesHandler(get_wsgi_application())


def _get(path: str) -> int:
    """One GET through a development server; its status."""
    server = WSGIServer(("127.0.0.1", 0), WSGIRequestHandler)
    server.set_app(_app())
    thread = threading.Thread(target=server.handle_request)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}{path}"
        with urllib.request.urlopen(url, timeout=30) as answer:
            answer.read()  # all of it: a connection closed early is a "broken pipe" line
            status = int(answer.status)
    finally:
        thread.join(timeout=30)
        server.server_close()
    return status


def test_a_page_request_is_logged_once(dev_log: io.StringIO) -> None:
    assert _get("/health/live/") == 200
    lines = [line for line in dev_log.getvalue().splitlines() if "/health/live/" in line]
    assert len(lines) == 1, lines
    # Ours: the request logger's line, with the method, path and status.
    assert "sizing_site.request" in lines[0] and "GET /health/live/ 200" in lines[0]


def test_a_static_file_keeps_runservers_line(dev_log: io.StringIO) -> None:
    assert _get("/static/css/site.css") == 200
    lines = [line for line in dev_log.getvalue().splitlines() if "site.css" in line]
    assert len(lines) == 1, lines
    assert '"GET /static/css/site.css HTTP/1.1" 200' in lines[0]


def test_runservers_own_messages_stay() -> None:
    config = logging_config(log_format="text", level="INFO")
    assert "request_line_once" in config["loggers"]["django.server"]["filters"]
    message = "You're accessing the development server over HTTPS, but it only supports HTTP."
    record = logging.makeLogRecord({"name": "django.server", "msg": message, "status_code": 500})
    assert RequestLineOnce().filter(record)
