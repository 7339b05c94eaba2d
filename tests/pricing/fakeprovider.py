"""A local HTTP server that plays a price provider: recorded responses, errors and delays.

Runs http.server in a thread on 127.0.0.1 with a random port; tests never reach the
internet. Bodies may contain "{base}" (the server's own URL) for NextPageLink-style links.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@dataclass
class Route:
    body: str = ""
    status: int = 200
    delay_s: float = 0.0
    content_type: str = "application/json"


@dataclass
class FakeProvider:
    base: str = ""
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)

    def serve(self, path: str, body: str = "", **kwargs: object) -> None:
        self.routes[path] = Route(body=body, **kwargs)  # type: ignore[arg-type]

    def serve_fixture(self, path: str, name: str, **kwargs: object) -> None:
        self.serve(path, (FIXTURES / name).read_text(), **kwargs)

    def url(self, path: str) -> str:
        return self.base + path


@contextmanager
def fake_provider() -> Iterator[FakeProvider]:
    provider = FakeProvider()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0]
            provider.requests.append((self.command, self.path, dict(self.headers), body))
            route = provider.routes.get(path, Route(body='{"error": "no route"}', status=404))
            if route.delay_s:
                time.sleep(route.delay_s)
            payload = route.body.replace("{base}", provider.base).encode()
            try:
                self.send_response(route.status)
                self.send_header("Content-Type", route.content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    with local_server(Handler) as server:
        provider.base = f"http://127.0.0.1:{server.server_address[1]}"
        yield provider


@contextmanager
def local_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    """Serve `handler` on 127.0.0.1 and a random port, in a thread, for the with-block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
