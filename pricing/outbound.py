"""Every outbound HTTP request of the pricing app goes through here: one policy for the
fetchers, staff-configured sources and the organisation feed form.

- http and https only; proxies from the environment are not used (they would resolve
  the host themselves, out of reach of the check below).
- The host is resolved once and every address it resolves to must be a public one
  (`ipaddress.is_global`, and not loopback, private, link-local, multicast, reserved or
  unspecified, IPv4-mapped IPv6 included) unless the host is in
  `settings.OUTBOUND_ALLOWED_HOSTS`. The connection goes to that checked address while
  the Host header and TLS SNI name the original host, so DNS rebinding between the check
  and the connect cannot swap the address.
- Redirects are followed by hand, at most `OUTBOUND_MAX_REDIRECTS`, each hop checked the
  same way; Authorization is dropped when the host changes.
- One deadline per fetch (`OUTBOUND_DEADLINE_S`), not per read: a watchdog shuts the
  socket when it passes, so a source sending a byte at a time cannot hold the worker.
- A byte cap (`OUTBOUND_MAX_BYTES`, or the caller's own for streamed bulk files) on what
  is read; the body is read in chunks, never whole before counting.
- Error messages say what went wrong in words ("the address is not allowed") and never
  carry OS error text, addresses or ports, which would let a feed URL probe the network.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import logging
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from django.conf import settings
from django.utils import formats
from django.utils.translation import gettext as _

logger = logging.getLogger(__name__)

SCHEMES = {"http": 80, "https": 443}
REDIRECTS = {301, 302, 303, 307, 308}
CHUNK_BYTES = 64 * 1024
FORM_DEADLINE_S = 5.0  # resolving a URL while an admin waits for the page
# NAT64 (RFC 6052) embeds an IPv4 address in the last 32 bits; check that address.
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class FetchError(Exception):
    """The source answered with something we cannot use; retrying will not help."""


class TransientFetchError(FetchError):
    """Timeout, lost connection or HTTP 5xx/429: worth retrying later."""


class NotAllowed(FetchError):
    """The policy refuses the URL or an address it resolves to; never retried."""


class TooLarge(FetchError):
    """The body passed the byte cap."""


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (`ip`) and what to name (`host`)."""

    scheme: str
    host: str
    port: int
    path: str
    ip: str


def address_allowed(address: str) -> bool:
    """True only for a public unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None and not address_allowed(str(embedded)):
            return False
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


def host_allowed_by_settings(host: str) -> bool:
    allowed = {h.strip().strip("[]").lower() for h in settings.OUTBOUND_ALLOWED_HOSTS}
    return host.lower() in allowed


def megabytes(count: int) -> str:
    """The size as the house writes it (2 MB means 2 MiB, as on the upload form), in the
    active language's number format: the message may be shown on a page."""
    value = round(count / (1024 * 1024), 1)
    return formats.number_format(int(value) if value.is_integer() else value, use_l10n=True)


class Deadline:
    """A wall-clock budget for one fetch; when it passes, the watched socket is shut."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.expired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            if self._sock is not None:
                # An already closed socket has nothing left to interrupt.
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_RDWR)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
        if self.expired:
            self._fire()

    def remaining(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0 or self.expired:
            self.expired = True
            raise timed_out()
        return left

    def arm_socket(self) -> None:
        """Bound the next blocking call too, in case the watchdog is late."""
        if self._sock is not None:
            # A closed socket: the read that follows reports it.
            with contextlib.suppress(OSError):
                self._sock.settimeout(self.remaining())

    def cancel(self) -> None:
        self._timer.cancel()


def timed_out() -> TransientFetchError:
    return TransientFetchError(_("the source did not answer in time"))


def _not_allowed() -> NotAllowed:
    return NotAllowed(_("the address is not allowed"))


# -- checking a URL -----------------------------------------------------------------------


def _split(url: str) -> tuple[str, str, int, str]:
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        raise NotAllowed(_("the URL is not valid")) from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise NotAllowed(_("only http and https addresses are allowed"))
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise NotAllowed(_("the URL is not valid"))
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    return scheme, host, port or SCHEMES[scheme], path


def _lookup(host: str, port: int, deadline: Deadline) -> list[str]:
    """getaddrinfo in a helper thread: the resolver has no timeout of ours."""
    found: list[str] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            found.extend(str(info[4][0]) for info in infos)
        except (OSError, UnicodeError) as exc:
            failed.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(deadline.remaining())
    if thread.is_alive():
        raise timed_out()
    if failed or not found:
        logger.info("outbound: cannot resolve %s: %s", host, failed[:1])
        raise TransientFetchError(_("the host name could not be resolved"))
    return found


def target_check(url: str, deadline: Deadline) -> Target:
    """Resolve the URL's host and apply the policy; the Target pins the address."""
    scheme, host, port, path = _split(url)
    addresses = _lookup(host, port, deadline)
    if not host_allowed_by_settings(host) and not all(address_allowed(a) for a in addresses):
        logger.info("outbound: refused %s (resolves to %s)", host, addresses)
        raise _not_allowed()
    return Target(scheme=scheme, host=host, port=port, path=path, ip=addresses[0])


def url_check(url: str, *, deadline_s: float = FORM_DEADLINE_S) -> None:
    """The save-time check of a URL someone typed; raises FetchError with the reason."""
    deadline = Deadline(deadline_s)
    try:
        target_check(url, deadline)
    finally:
        deadline.cancel()


# -- connecting to the checked address ----------------------------------------------------


class _Pinned:
    """Connect to the checked address; Host header and SNI keep the original name."""

    _ip: str
    _deadline: Deadline
    sock: Any
    port: int

    def _pinned_socket(
        self, address: tuple[str, int], timeout: Any = None, source_address: Any = None
    ) -> socket.socket:
        return socket.create_connection((self._ip, self.port), self._deadline.remaining())

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self._deadline.watch(self.sock)


class _PinnedHTTP(_Pinned, http.client.HTTPConnection):
    def __init__(self, target: Target, deadline: Deadline) -> None:
        super().__init__(target.host, target.port, timeout=deadline.remaining())
        self._ip, self._deadline = target.ip, deadline
        self._create_connection = self._pinned_socket


class _PinnedHTTPS(_Pinned, http.client.HTTPSConnection):
    def __init__(self, target: Target, deadline: Deadline) -> None:
        context = ssl.create_default_context()
        super().__init__(target.host, target.port, timeout=deadline.remaining(), context=context)
        self._ip, self._deadline = target.ip, deadline
        self._create_connection = self._pinned_socket


def _failure(exc: BaseException, deadline: Deadline) -> FetchError:
    """Map a network error to words; the details go to the log only."""
    logger.info("outbound: %s", exc, exc_info=False)
    if deadline.expired or isinstance(exc, TimeoutError):
        return timed_out()
    if isinstance(exc, ssl.SSLCertVerificationError):
        return FetchError(_("the source's TLS certificate is not valid"))
    return TransientFetchError(_("the source could not be reached"))


def _status_error(status: int) -> FetchError:
    message = _("the source answered HTTP %(status)d") % {"status": status}
    if status >= 500 or status == 429:
        return TransientFetchError(message)
    return FetchError(message)


# -- the response -------------------------------------------------------------------------


class Response:
    """The body of a checked fetch, read in chunks under the cap and the deadline."""

    def __init__(
        self,
        conn: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        deadline: Deadline,
        max_bytes: int,
    ) -> None:
        self._conn, self._response, self._deadline = conn, response, deadline
        self.max_bytes, self.bytes_read = max_bytes, 0
        declared = response.getheader("Content-Length") or ""
        if declared.isascii() and declared.isdigit() and int(declared) > max_bytes:
            self.close()
            raise self._too_large()

    def _too_large(self) -> TooLarge:
        return TooLarge(
            _("the response is larger than %(n)s MB") % {"n": megabytes(self.max_bytes)}
        )

    def read(self, amt: int = CHUNK_BYTES) -> bytes:
        """Up to `amt` bytes (fewer is not the end); b"" at the end of the body."""
        try:
            self._deadline.arm_socket()
            data = self._response.read1(max(1, min(amt, CHUNK_BYTES)))
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise _failure(exc, self._deadline) from None
        if self._deadline.expired:
            self.close()
            raise timed_out()
        self.bytes_read += len(data)
        if self.bytes_read > self.max_bytes:
            self.close()
            raise self._too_large()
        return data

    def read_all(self) -> bytes:
        chunks = []
        while chunk := self.read():
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self._deadline.cancel()
        self._response.close()
        self._conn.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# -- fetching -----------------------------------------------------------------------------


def _send(
    target: Target,
    method: str,
    headers: Mapping[str, str],
    body: bytes | None,
    deadline: Deadline,
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    conn = kind(target, deadline)
    try:
        conn.request(method, target.path, body=body, headers=dict(headers))
        return conn, conn.getresponse()
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        raise _failure(exc, deadline) from None


def _next_hop(
    url: str, response: http.client.HTTPResponse, method: str, headers: dict[str, str]
) -> tuple[str, str, dict[str, str]]:
    location = response.getheader("Location")
    if not location:
        raise FetchError(_("the source redirected without saying where"))
    new_url = urllib.parse.urljoin(url, location.strip())
    if urllib.parse.urlsplit(new_url).netloc != urllib.parse.urlsplit(url).netloc:
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    if response.status == 303 or (response.status in (301, 302) and method != "GET"):
        method = "GET"
    return new_url, method, headers


def fetch(
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    max_bytes: int | None = None,
    deadline_s: float | None = None,
) -> Response:
    """Open `url` under the policy; the caller reads the Response (or closes it)."""
    deadline = Deadline(float(deadline_s or settings.OUTBOUND_DEADLINE_S))
    limit = int(max_bytes or settings.OUTBOUND_MAX_BYTES)
    sent = dict(headers or {})
    try:
        for _hop in range(int(settings.OUTBOUND_MAX_REDIRECTS) + 1):
            target = target_check(url, deadline)
            conn, response = _send(target, method, sent, body, deadline)
            if response.status not in REDIRECTS:
                if response.status >= 400:
                    conn.close()
                    raise _status_error(response.status)
                return Response(conn, response, deadline, limit)
            conn.close()
            url, new_method, sent = _next_hop(url, response, method, sent)
            body = body if new_method == method else None
            method = new_method
        raise FetchError(_("the source redirected too many times"))
    except BaseException:
        deadline.cancel()
        raise
