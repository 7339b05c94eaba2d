"""A refused request (403, 401) logs one line, without a traceback: probing every address
as a viewer or a visitor must not fill the log with tracebacks. Server errors keep theirs."""

from __future__ import annotations

import logging
import sys

import pytest
from django.core.exceptions import PermissionDenied
from rest_framework import exceptions as drf

from sizing_site.core.logconfig import JsonFormatter, RefusalWithoutTraceback
from tests.cast import CastTestCase


class RefusalLogTests(CastTestCase):
    @pytest.fixture(autouse=True)
    def _caplog(self, caplog: pytest.LogCaptureFixture) -> None:
        self.caplog = caplog

    def refusals(self) -> list[logging.LogRecord]:
        return [r for r in self.caplog.records if r.name == "django.request"]

    def test_a_403_from_a_page_logs_one_line_without_its_traceback(self) -> None:
        self.client.force_login(self.bob)  # a viewer: may not add models
        with self.caplog.at_level(logging.WARNING):
            response = self.client.get("/en/o/org-a/own/models/new/")
        assert response.status_code == 403
        [record] = self.refusals()
        assert record.getMessage() == "Forbidden (Permission denied): /en/o/org-a/own/models/new/"
        assert record.levelno == logging.WARNING
        assert record.exc_info is None
        assert "Traceback" not in self.caplog.text
        assert "exc_info" not in JsonFormatter().format(record)

    def test_api_refusals_log_one_line_without_a_traceback(self) -> None:
        self.client.force_login(self.bob)
        with self.caplog.at_level(logging.WARNING):
            forbidden = self.client.post(
                "/api/v1/o/org-a/accelerators/", {}, content_type="application/json"
            )
            self.client.logout()
            anonymous = self.client.get("/api/v1/o/org-a/accelerators/")
        assert (forbidden.status_code, anonymous.status_code) in ((403, 403), (403, 401))
        assert len(self.refusals()) == 2
        assert all(r.exc_info is None for r in self.refusals())
        assert "Traceback" not in self.caplog.text


def _record(exc: BaseException, status: int) -> logging.LogRecord:
    try:
        raise exc
    except BaseException:
        info = sys.exc_info()
    record = logging.makeLogRecord({"msg": "x", "exc_info": info, "status_code": status})
    RefusalWithoutTraceback().filter(record)
    return record


def test_the_filter_drops_the_traceback_of_refusals_only() -> None:
    for exc, status in (
        (PermissionDenied(), 403),
        (drf.PermissionDenied(), 403),
        (drf.NotAuthenticated(), 401),
        (drf.AuthenticationFailed(), 401),
        (ValueError("a refusal by status alone"), 403),
    ):
        assert _record(exc, status).exc_info is None, exc
    # A server error keeps its traceback: that one is a bug to read.
    assert _record(ValueError("boom"), 500).exc_info is not None
