"""Request bodies over their address's limit: a 413 before the CSRF check, the session or
any view reads a byte, whether the length is declared or the body comes chunked."""

from __future__ import annotations

import io
import time
from typing import Any
from unittest import mock

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.test import Client
from django.utils import translation

from catalog.forms import MAX_WHOLE_GGUF_BYTES
from sizing_site.body_limits import (
    ADMIN_BYTES,
    API_BYTES,
    CONFIG_FORM_BYTES,
    FORM_BYTES,
    FRAMING,
    LOGIN_BYTES,
    body_limit,
)
from sizing_site.configurator.api import EstimateApi
from sizing_site.owncatalog.forms import MAX_MODEL_POST_BYTES
from tests.cast import CastTestCase

MIDDLEWARE = "sizing_site.body_limits.BodyLimitMiddleware"
HALF_GB = 500 * 1024 * 1024
MULTIPART = "multipart/form-data; boundary=BoUnDaRy"
# A body without a Content-Length, from a server that ends the input at the body's end.
CHUNKED: dict[str, Any] = {"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input_terminated": True}


class Body(io.RawIOBase):
    """A request body of `size` bytes made as it is read (nothing is allocated up front);
    reading more than `allowed` of it fails the test at once."""

    def __init__(self, size: int, allowed: int = 0, data: bytes = b"") -> None:
        self.size, self.allowed, self.data = size, allowed, data
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def read(self, n: int | None = -1) -> bytes:
        left = self.size - self.read_bytes
        n = left if n is None or n < 0 else min(n, left)
        if self.read_bytes + n > self.allowed:
            raise AssertionError(f"read past byte {self.allowed} of the body")
        start = self.read_bytes
        self.read_bytes += n
        chunk = self.data[start : start + n]
        return chunk + b"\0" * (n - len(chunk))


def test_the_limit_runs_before_anything_reads_a_body() -> None:
    middleware = list(settings.MIDDLEWARE)
    for later in (
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "axes.middleware.AxesMiddleware",
    ):
        assert middleware.index(MIDDLEWARE) < middleware.index(later), later


def test_each_address_has_its_limit() -> None:
    assert body_limit("/en/accounts/login/") == LOGIN_BYTES
    assert body_limit("/de/accounts/login/") == LOGIN_BYTES  # any language's prefix
    assert body_limit("/admin/login/") == LOGIN_BYTES
    assert body_limit("/api/v1/estimate/") == API_BYTES
    assert body_limit("/api/v1/o/org-a/configurations/") == API_BYTES
    assert body_limit("/zh-hans/models/import/gguf/") == MAX_WHOLE_GGUF_BYTES + FRAMING
    assert body_limit("/en/o/org-a/own/models/new/") == MAX_MODEL_POST_BYTES
    assert body_limit("/it/models/import/config/") == CONFIG_FORM_BYTES
    assert body_limit("/admin/catalog/llmmodel/add/") == ADMIN_BYTES
    assert body_limit("/en/o/org-a/own/accelerators/new/") == FORM_BYTES
    assert body_limit("/no/such/address/") == FORM_BYTES
    assert LOGIN_BYTES < FORM_BYTES < API_BYTES < MAX_WHOLE_GGUF_BYTES


def test_djangos_own_cap_on_form_fields_is_the_largest_a_page_takes() -> None:
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == CONFIG_FORM_BYTES


class BodyLimitTests(CastTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def post(self, url: str, body: Body, client: Client | None = None, **extra: Any) -> Any:
        """POST `body` as the WSGI input, with `extra` as the environ's other keys."""
        environ: dict[str, Any] = {"wsgi.input": body, **extra}
        return (client or Client(enforce_csrf_checks=True)).generic("POST", url, **environ)

    def test_a_500_mb_body_is_refused_unread_on_the_login_pages_and_the_api(self) -> None:
        cases = {
            "/en/accounts/login/": LOGIN_BYTES,
            "/admin/login/": LOGIN_BYTES,
            "/api/v1/estimate/": API_BYTES,
            "/api/v1/o/org-a/configurations/": API_BYTES,
        }
        with (
            mock.patch.object(LoginView, "post", side_effect=AssertionError("view ran")),
            mock.patch.object(EstimateApi, "post", side_effect=AssertionError("view ran")),
        ):
            for url, limit in cases.items():
                body = Body(HALF_GB)
                started = time.perf_counter()
                response = self.post(url, body, CONTENT_TYPE=MULTIPART, CONTENT_LENGTH=str(HALF_GB))
                assert time.perf_counter() - started < 1.0, url
                assert response.status_code == 413, url
                assert body.read_bytes == 0, url
                size = "64.0\xa0KB" if limit == LOGIN_BYTES else "8.0\xa0MB"
                message = f"The request body is too large: this address takes at most {size}."
                if url.startswith("/api/"):
                    assert response.json() == {"errors": {"request": [message]}}, url
                else:
                    assert response.content.decode() == message, url

    def test_a_chunked_body_over_the_limit_is_refused_after_the_limit(self) -> None:
        for url, limit in (("/en/accounts/login/", LOGIN_BYTES), ("/api/v1/estimate/", API_BYTES)):
            body = Body(HALF_GB, allowed=limit + 1)
            started = time.perf_counter()
            response = self.post(
                url,
                body,
                CONTENT_TYPE="application/x-www-form-urlencoded",
                **CHUNKED,
            )
            assert time.perf_counter() - started < 1.0, url
            assert response.status_code == 413, url
            assert body.read_bytes == limit + 1, url  # not a byte further

    def test_a_chunked_body_within_the_limit_reaches_the_view_whole(self) -> None:
        self.client.force_login(self.alice)
        data = b'{"identifier": ["a"], "role": "viewer"}'
        response = self.post(
            "/api/v1/o/org-a/members/invitations/",
            Body(len(data), allowed=len(data), data=data),
            client=self.client,
            CONTENT_TYPE="application/json",
            **CHUNKED,
        )
        assert response.status_code == 400
        assert response.json() == {"errors": {"identifier": ["Expected a string."]}}

    def test_a_declared_length_within_the_limit_is_read_as_before(self) -> None:
        data = b"username=alice&password=pw-alice-123"
        response = self.client.generic(
            "POST",
            "/en/accounts/login/",
            data,
            content_type="application/x-www-form-urlencoded",
        )
        assert response.status_code == 302

    def test_a_content_length_that_is_no_number_is_a_400(self) -> None:
        response = self.post(
            "/api/v1/estimate/", Body(10), CONTENT_TYPE=MULTIPART, CONTENT_LENGTH="1e9"
        )
        assert response.status_code == 400
        assert response.json() == {
            "errors": {"request": ["The Content-Length header is not a number."]}
        }
