"""The outbound policy (pricing/outbound.py): which addresses, redirects, the deadline and
the byte cap, and that the feed form and every refresh go through it.

Servers here are local (127.0.0.1) and, unlike the `fake` fixture's, not allowed by
default: a test allows a host only where it says so, so the policy is on as in production.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.test import override_settings

from pricing import outbound, services
from pricing.fetchers.base import FetchError, NotAllowed, TransientFetchError
from pricing.models import RunStatus
from tests.pricing.helpers import source
from tests.pricing.hostile import MB, answer, endless, redirect, serving, trickle

REAL_GETADDRINFO = socket.getaddrinfo


@contextmanager
def dns(names: dict[str, list[str]]) -> Iterator[mock.MagicMock]:
    """Made-up names resolve to the given addresses; every other name as usual."""

    def lookup(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host in names:
            return [
                (
                    socket.AF_INET6 if ":" in a else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (a, port),
                )
                for a in names[host]
            ]
        return REAL_GETADDRINFO(host, port, *args, **kwargs)

    with mock.patch.object(outbound.socket, "getaddrinfo", side_effect=lookup) as patched:
        yield patched


# -- which addresses ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.255.0.9",  # all of 127/8 is loopback
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # carrier-grade NAT
        "0.0.0.0",
        "224.0.0.1",  # multicast: is_global alone says True for it
        "240.0.0.1",
        "255.255.255.255",
        "192.0.2.1",  # documentation
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::ffff:169.254.169.254",
        "2002:7f00:1::1",  # 6to4 wrapping 127.0.0.1
        "64:ff9b::a00:1",  # NAT64 wrapping 10.0.0.1
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert not outbound.address_allowed(address)


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert outbound.address_allowed(address)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1/feed.csv", "the address is not allowed"),
        ("http://10.0.0.1/feed.csv", "the address is not allowed"),
        ("http://169.254.169.254/latest/meta-data/", "the address is not allowed"),
        ("http://[::1]/feed.csv", "the address is not allowed"),
        ("http://2130706433/feed.csv", "the address is not allowed"),  # 127.0.0.1 as a number
        ("ftp://example.com/feed.csv", "only http and https addresses are allowed"),
        ("file:///etc/passwd", "only http and https addresses are allowed"),
        ("http://example.com:99999/", "the URL is not valid"),
    ],
)
def test_url_check_refuses_with_a_reason_that_names_no_address(url: str, message: str) -> None:
    with pytest.raises(NotAllowed) as raised:
        outbound.url_check(url)
    assert str(raised.value) == message


def test_a_name_resolving_to_private_space_is_refused_even_if_one_address_is_public() -> None:
    with (
        dns({"intranet.example": ["8.8.8.8", "10.1.2.3"]}),
        pytest.raises(NotAllowed, match=r"^the address is not allowed$"),
    ):
        outbound.url_check("https://intranet.example/feed.csv")


def test_staff_allowed_hosts_pass_and_the_policy_is_on_by_default() -> None:
    with dns({"mirror.intranet": ["10.1.2.3"]}):
        with pytest.raises(NotAllowed):
            outbound.url_check("http://mirror.intranet/prices")
        with override_settings(OUTBOUND_ALLOWED_HOSTS=["mirror.intranet"]):
            outbound.url_check("http://mirror.intranet/prices")


def test_the_connection_goes_to_the_checked_address_with_the_original_host_header() -> None:
    # One lookup per fetch, and the socket goes to what it returned: a second answer from
    # a rebinding DNS server is never asked for.
    with serving(answer(b"sku,on_demand_per_hour\nx,1\n")) as served:
        port = served.base.rsplit(":", 1)[1]
        with (
            dns({"feeds.test": ["127.0.0.1"]}) as lookup,
            override_settings(OUTBOUND_ALLOWED_HOSTS=["feeds.test"]),
        ):
            body = outbound.fetch(f"http://feeds.test:{port}/feed.csv").read_all()
    assert body == b"sku,on_demand_per_hour\nx,1\n"
    # The name is looked up once; the connection is made to the address it gave.
    assert [c.args[0] for c in lookup.call_args_list] == ["feeds.test", "127.0.0.1"]
    assert served.requests[0]["Host"] == f"feeds.test:{port}"


def test_nothing_connects_when_the_address_is_refused() -> None:
    with (
        dns({"evil.example": ["169.254.169.254"]}),
        mock.patch.object(outbound.socket, "create_connection") as connect,
        pytest.raises(NotAllowed),
    ):
        outbound.fetch("http://evil.example/latest/meta-data/")
    connect.assert_not_called()


# -- redirects ------------------------------------------------------------------------------


def test_a_redirect_to_loopback_is_refused_and_never_followed() -> None:
    with (
        serving(answer(b"secret")) as internal,
        dns({"feeds.test": ["127.0.0.1"]}),
        serving(redirect(internal.base + "/admin")) as public,
        override_settings(OUTBOUND_ALLOWED_HOSTS=["feeds.test"]),
        pytest.raises(NotAllowed, match=r"^the address is not allowed$"),
    ):
        outbound.fetch(public.base.replace("127.0.0.1", "feeds.test") + "/feed.csv")
    assert len(public.requests) == 1
    assert internal.requests == []


@override_settings(OUTBOUND_ALLOWED_HOSTS=["127.0.0.1"], OUTBOUND_MAX_REDIRECTS=3)
def test_redirects_stop_after_the_hop_limit() -> None:
    with (
        serving(redirect("{base}/again")) as loop,
        pytest.raises(FetchError, match="redirected too many times"),
    ):
        outbound.fetch(loop.base + "/start")
    assert len(loop.requests) == 4  # the first request and 3 hops


def test_authorization_is_not_sent_to_another_host_after_a_redirect() -> None:
    with (
        serving(answer(b"ok")) as other,
        dns({"other.test": ["127.0.0.1"]}),
        serving(redirect(other.base.replace("127.0.0.1", "other.test") + "/x")) as first,
        override_settings(OUTBOUND_ALLOWED_HOSTS=["127.0.0.1", "other.test"]),
    ):
        response = outbound.fetch(first.base, headers={"Authorization": "Bearer k"})
        assert response.read_all() == b"ok"
    assert first.requests[0]["Authorization"] == "Bearer k"
    assert "Authorization" not in other.requests[0]


# -- size cap -------------------------------------------------------------------------------


@override_settings(OUTBOUND_ALLOWED_HOSTS=["127.0.0.1"], OUTBOUND_MAX_BYTES=1 * MB)
def test_a_600_mb_body_is_cut_at_the_cap_without_holding_it() -> None:
    with serving(endless(600 * MB)) as served:
        tracemalloc.start()
        try:
            with pytest.raises(outbound.TooLarge) as raised:
                outbound.fetch(served.base + "/feed.csv").read_all()
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        served.finished.wait(10)
    assert str(raised.value) == "the response is larger than 1 MB"
    # Held: the 1 MiB read so far plus a chunk, not 600 MB.
    assert peak < 4 * MB
    # The server stopped once the client hung up: what it sent is socket buffers' worth.
    assert served.bytes_sent < 64 * MB


@override_settings(OUTBOUND_ALLOWED_HOSTS=["127.0.0.1"], OUTBOUND_MAX_BYTES=1 * MB)
def test_a_declared_length_over_the_cap_is_refused_before_reading() -> None:
    with (
        serving(endless(600 * MB, declare_length=True)) as served,
        pytest.raises(outbound.TooLarge, match="larger than 1 MB"),
    ):
        outbound.fetch(served.base + "/feed.csv")


@pytest.mark.django_db
@override_settings(OUTBOUND_ALLOWED_HOSTS=["127.0.0.1"], OUTBOUND_MAX_BYTES=1 * MB)
def test_a_feed_over_the_cap_is_a_recorded_failure_that_is_not_retried() -> None:
    with serving(endless(600 * MB)) as served:
        feed = source("feed", served.base + "/feed.csv")
        run = services.price_source_refresh(source_id=feed.pk)  # raises if retryable
    assert (run.status, run.error) == (RunStatus.FAILED, "the response is larger than 1 MB")


# -- deadline -------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("in_headers", [False, True])
def test_a_trickling_source_stops_at_the_total_deadline(in_headers: bool) -> None:
    # One byte every 0.5 s: each read is quick, so only a total deadline stops it.
    with serving(trickle(every_s=0.5, limit_s=20, in_headers=in_headers)) as served:
        feed = source("feed", served.base + "/feed.csv")
        started = time.monotonic()
        with (
            override_settings(OUTBOUND_ALLOWED_HOSTS=["127.0.0.1"], OUTBOUND_DEADLINE_S=2),
            pytest.raises(TransientFetchError, match=r"^the source did not answer in time$"),
        ):
            services.price_source_refresh(source_id=feed.pk)
        elapsed = time.monotonic() - started
    assert 2 <= elapsed < 3.5
    assert served.bytes_sent <= 8  # 2 s at one byte per 0.5 s, give or take a byte
    run = feed.runs.get()
    assert (run.status, run.error) == (RunStatus.FAILED, "the source did not answer in time")


# -- sources and the task -------------------------------------------------------------------


@pytest.mark.django_db
def test_a_staff_source_pointing_inside_fails_without_retry_and_names_no_address() -> None:
    aws = source("aws", "http://169.254.169.254")
    run = services.price_source_refresh(source_id=aws.pk)  # NotAllowed is not re-raised
    assert (run.status, run.error) == (RunStatus.FAILED, "the address is not allowed")
    assert not issubclass(NotAllowed, TransientFetchError)  # autoretry_for skips it


# -- https ----------------------------------------------------------------------------------


@pytest.fixture
def tls_files(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for feeds.test (openssl is in the CI image)."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=feeds.test", "-addext", "subjectAltName=DNS:feeds.test"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def test_https_connects_to_the_pinned_address_with_sni_and_checks_the_name(
    tls_files: tuple[Path, Path],
) -> None:
    cert, key = tls_files
    seen_sni: list[str | None] = []
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    server_context.sni_callback = lambda sock, name, ctx: seen_sni.append(name)
    client_context = ssl.create_default_context(cafile=str(cert))
    with (
        serving(answer(b"ok")) as served,
        dns({"feeds.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}),
        mock.patch.object(outbound.ssl, "create_default_context", return_value=client_context),
        override_settings(OUTBOUND_ALLOWED_HOSTS=["feeds.test", "other.test"]),
    ):
        server = served.server
        assert server is not None
        server.socket = server_context.wrap_socket(server.socket, server_side=True)
        port = served.base.rsplit(":", 1)[1]
        assert outbound.fetch(f"https://feeds.test:{port}/").read_all() == b"ok"
        # The certificate is checked against the name asked for, not the pinned address.
        with pytest.raises(FetchError, match="TLS certificate is not valid"):
            outbound.fetch(f"https://other.test:{port}/")
    assert seen_sni[0] == "feeds.test"
    assert served.requests[0]["Host"] == f"feeds.test:{port}"
