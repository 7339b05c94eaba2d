"""gunicorn's threaded worker, changed so that slow or stalled clients cannot hold threads.

The stock gthread worker hands a connection to a pool thread as soon as its first byte
arrives, and the thread then reads the rest of the request with no timeout: a client that
sends half a request and stops holds that thread for good, and a few dozen such clients
(reconnecting when dropped) stall every page. Here the request head (request line and
headers) is gathered without blocking: while it is incomplete the connection waits in the
worker's event loop, which costs no thread. A head still incomplete after
GUNICORN_REQUEST_HEAD_DEADLINE seconds (default 20) is dropped, as is a connection silent
for GUNICORN_KEEPALIVE seconds. Once a thread has the request, each later socket read
(the body) waits at most GUNICORN_CLIENT_TIMEOUT seconds (default 10).

API requests (a path under /api/) run in a thread pool of their own, of
GUNICORN_API_THREADS threads (default 2; 0: one pool for everything): the pages, the login
page and the health checks keep GUNICORN_THREADS threads however many API calls wait. A
member's scripts that send expensive requests, and send them again at once when refused,
then queue behind each other, not in front of every page. The request line is peeked at
without reading it; a connection whose first bytes have not arrived goes to the pages'
pool, which defers it to the event loop until they do.

Its access log, when on (GUNICORN_ACCESSLOG), keeps share tokens out as every other log
does (sizing_site.core.logconfig.ShareTokenFilter).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gunicorn.workers.gthread import _DEFER, ThreadWorker

from sizing_site.core.logconfig import ShareTokenFilter

CLIENT_TIMEOUT_S = float(os.environ.get("GUNICORN_CLIENT_TIMEOUT", "10"))
API_THREADS = int(os.environ.get("GUNICORN_API_THREADS", "2"))
_API_PATH = b"/api/"
_API_POOL = "api"  # its threads' name prefix
_HANDED_OVER = object()  # handle() passed the connection on to the API's pool
HEAD_DEADLINE_S = float(os.environ.get("GUNICORN_REQUEST_HEAD_DEADLINE", "20"))
_END_OF_HEAD = b"\r\n\r\n"


class BoundedSocket(socket.socket):
    """An accepted client socket whose blocking reads give up after CLIENT_TIMEOUT_S."""

    __slots__ = ()

    def setblocking(self, flag: bool) -> None:
        if flag:
            self.settimeout(CLIENT_TIMEOUT_S)
        else:
            super().setblocking(False)

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        try:
            return super().recv(bufsize, flags)
        except TimeoutError:
            return b""  # end of input: gunicorn then drops the connection quietly


class _Head:
    """The part of a request head received so far, and when it started arriving."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.deadline = time.monotonic() + HEAD_DEADLINE_S


class BoundedThreadWorker(ThreadWorker):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cfg = self.cfg
        self.max_head_bytes = (
            cfg.limit_request_line + cfg.limit_request_fields * (cfg.limit_request_field_size + 2)
        ) or math.inf
        self.heads: weakref.WeakKeyDictionary[Any, _Head] = weakref.WeakKeyDictionary()
        # gunicorn's access log writes each request line, a share link's token included.
        logging.getLogger("gunicorn.access").addFilter(ShareTokenFilter())

    def init_process(self) -> None:
        # Before the base class's, which ends by running the worker's loop.
        self.api_pool = ThreadPoolExecutor(API_THREADS, _API_POOL) if API_THREADS > 0 else None
        super().init_process()

    def run(self) -> None:
        try:
            super().run()
        finally:
            if self.api_pool is not None:
                self.api_pool.shutdown(wait=False)

    def enqueue_req(self, conn: Any) -> None:
        if type(conn.sock) is socket.socket:
            # Same memory layout (no new slots), so the class can be swapped in place.
            conn.sock.__class__ = BoundedSocket
        pool = self.api_pool if self.api_pool is not None and self._for_api(conn) else self.tpool
        self._submit(pool, conn)

    def _submit(self, pool: ThreadPoolExecutor, conn: Any) -> None:
        done = pool.submit(self.handle, conn)
        done.add_done_callback(
            lambda future: self.method_queue.defer(self.finish_request, conn, future)
        )

    def finish_request(self, conn: Any, fs: Any) -> None:
        if not fs.cancelled() and fs.result() is _HANDED_OVER:
            return  # the API's pool has the connection now; its own future will finish it
        super().finish_request(conn, fs)

    def _for_api(self, conn: Any) -> bool:
        """Whether the request waiting on the connection is for the API, from its request
        line: read ahead already, or peeked at on the socket without reading it."""
        if self.cfg.is_ssl or conn.is_http2:
            return False
        ahead = conn.parser.unreader.buf.getvalue() if conn.parser else b""
        try:
            start = ahead or socket.socket.recv(
                conn.sock, 64, socket.MSG_PEEK | socket.MSG_DONTWAIT
            )
        except OSError:  # nothing arrived yet (BlockingIOError), or the client has gone
            return False
        return start.partition(b" ")[2].startswith(_API_PATH)

    def handle(self, conn: Any) -> Any:
        if self.cfg.is_ssl or conn.is_http2:
            return super().handle(conn)
        ready = self._gather_head(conn)
        if ready is not True:
            return ready  # _DEFER: back to the event loop; False: drop the connection
        in_api_pool = threading.current_thread().name.startswith(_API_POOL)
        if self.api_pool is not None and not in_api_pool and self._for_api(conn):
            # A new connection's head arrived after it was queued for the pages' pool.
            self._submit(self.api_pool, conn)
            return _HANDED_OVER
        return super().handle(conn)

    def _gather_head(self, conn: Any) -> object:
        """Read what has arrived without blocking. True once the head is complete (or the
        client closed, or it is too long: the parser then answers or closes)."""
        head = self.heads.setdefault(conn, _Head())
        conn.sock.setblocking(False)
        buffered = conn.parser.unreader.take_buffered() if conn.parser else b""
        head.data[:0] = buffered
        closed = False
        while _END_OF_HEAD not in head.data and len(head.data) <= self.max_head_bytes:
            try:
                chunk = socket.socket.recv(conn.sock, 65536)
            except BlockingIOError:
                break
            closed = not chunk
            if closed:
                break
            head.data += chunk
        if closed or _END_OF_HEAD in head.data or len(head.data) > self.max_head_bytes:
            del self.heads[conn]
            conn.init()
            conn.parser.unreader.unread(bytes(head.data))
            conn.data_ready = True
            return True
        if time.monotonic() > head.deadline:
            return False
        if conn.parser:
            conn.parser.unreader.unread(bytes(head.data))
            head.data.clear()
        conn.data_ready = False
        return _DEFER
