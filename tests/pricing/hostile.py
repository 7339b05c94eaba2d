"""Local servers that misbehave on purpose: an endless body, a trickle, a redirect.

Each binds 127.0.0.1 on a random port and counts what it did, so a test can show that a
refused URL was never fetched and that a capped body was not read to its end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.pricing.fakeprovider import local_server

MB = 1024 * 1024


@dataclass
class Served:
    base: str = ""
    requests: list[dict[str, str]] = field(default_factory=list)
    bytes_sent: int = 0
    finished: threading.Event = field(default_factory=threading.Event)
    server: ThreadingHTTPServer | None = None


Behaviour = Callable[[BaseHTTPRequestHandler, Served], None]


@contextmanager
def serving(behaviour: Behaviour) -> Iterator[Served]:
    served = Served()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.requests.append({"path": self.path, **dict(self.headers)})
            try:
                behaviour(self, served)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client hung up, as it should
            finally:
                served.finished.set()

        def log_message(self, format: str, *args: object) -> None:
            pass

    with local_server(Handler) as server:
        served.base = f"http://127.0.0.1:{server.server_address[1]}"
        served.server = server
        yield served


def endless(total: int, *, declare_length: bool = False) -> Behaviour:
    """Send `total` bytes of CSV-looking text, made on the fly (nothing held in memory)."""

    def behave(handler: BaseHTTPRequestHandler, served: Served) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/csv")
        if declare_length:
            handler.send_header("Content-Length", str(total))
        handler.end_headers()
        chunk = b"x" * (64 * 1024)
        while served.bytes_sent < total:
            handler.wfile.write(chunk)
            served.bytes_sent += len(chunk)

    return behave


def trickle(*, every_s: float, limit_s: float, in_headers: bool = False) -> Behaviour:
    """One byte every `every_s` seconds, for at most `limit_s` (the test's own bound)."""

    def behave(handler: BaseHTTPRequestHandler, served: Served) -> None:
        if in_headers:
            data = b"HTTP/1.0 200 OK\r\nContent-Type: text/csv\r\n\r\nsku,on_demand_per_hour\n"
        else:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/csv")
            handler.end_headers()
            data = b"sku,on_demand_per_hour\n" + b"x" * 10_000
        stop = time.monotonic() + limit_s
        for byte in data:
            if time.monotonic() > stop:
                return
            handler.wfile.write(bytes([byte]))
            served.bytes_sent += 1
            time.sleep(every_s)

    return behave


def redirect(location: str) -> Behaviour:
    def behave(handler: BaseHTTPRequestHandler, served: Served) -> None:
        handler.send_response(302)
        handler.send_header("Location", location.replace("{base}", served.base))
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return behave


def answer(body: bytes, content_type: str = "text/csv") -> Behaviour:
    def behave(handler: BaseHTTPRequestHandler, served: Served) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        served.bytes_sent += len(body)

    return behave
