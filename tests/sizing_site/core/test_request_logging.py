from __future__ import annotations

import io
import json
import logging
import logging.config
import re
import sys
import types
from collections.abc import Iterator

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from sizing_site.core.error_tracking import init_error_tracking
from sizing_site.core.logconfig import logging_config
from sizing_site.core.request_id import current_request_id, request_id_from


@pytest.fixture
def log_lines(request: pytest.FixtureRequest) -> Iterator[io.StringIO]:
    """Logging configured as settings would, in the format the test is parametrised with,
    writing into a buffer; the previous configuration is put back afterwards."""
    stream = io.StringIO()
    config = logging_config(log_format=getattr(request, "param", "json"), level="INFO")
    config["handlers"]["console"]["stream"] = stream
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    logging.config.dictConfig(config)
    yield stream
    root.handlers[:], _ = saved
    root.setLevel(saved[1])


def test_a_well_formed_client_id_is_kept() -> None:
    assert request_id_from("abc-123-DEF") == "abc-123-DEF"
    assert request_id_from("a" * 64) == "a" * 64


@pytest.mark.parametrize(
    "header",
    [None, "", "a" * 65, "abc def", "abc\r\nX-Evil: 1", "abc_123", "ünïcode", "a;b"],
)
def test_anything_else_gets_a_fresh_id(header: str | None) -> None:
    made = request_id_from(header)
    assert made != header
    assert re.fullmatch(r"[0-9a-f]{32}", made)  # uuid4().hex


@pytest.mark.django_db
def test_the_response_carries_the_client_id(client: Client) -> None:
    response = client.get("/health/live/", HTTP_X_REQUEST_ID="probe-42")
    assert response["X-Request-ID"] == "probe-42"


@pytest.mark.django_db
def test_a_forged_id_is_replaced(client: Client) -> None:
    response = client.get("/health/live/", HTTP_X_REQUEST_ID="x" * 65)
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])


@pytest.mark.django_db
def test_each_request_logs_one_json_line_with_its_id(
    client: Client, log_lines: io.StringIO
) -> None:
    client.get("/health/live/", HTTP_X_REQUEST_ID="trace-7")
    entries = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    [entry] = [e for e in entries if e["logger"] == "sizing_site.request"]
    assert entry["request_id"] == "trace-7"
    assert entry["message"] == "GET /health/live/ 200"
    assert (entry["method"], entry["path"], entry["status"]) == ("GET", "/health/live/", 200)
    assert entry["level"] == "INFO"
    assert 0 <= entry["duration_ms"] < 5000


@pytest.mark.django_db
def test_lines_logged_inside_a_view_carry_the_id(client: Client, log_lines: io.StringIO) -> None:
    # django.request logs a 404 from inside the handler, before our middleware's own line.
    client.get("/health/no-such-page/", HTTP_X_REQUEST_ID="trace-404")
    entries = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    warnings = [e for e in entries if e["logger"] == "django.request"]
    assert [e["request_id"] for e in warnings] == ["trace-404"]
    assert warnings[0]["level"] == "WARNING"


@pytest.mark.parametrize("log_lines", ["text"], indirect=True)
def test_text_lines_carry_a_dash_outside_a_request(log_lines: io.StringIO) -> None:
    logging.getLogger("sizing_site.test").warning("started %d", 3)
    line = log_lines.getvalue().strip()
    assert line.endswith("WARNING sizing_site.test [-] started 3")


def test_json_lines_keep_exceptions_on_one_line(log_lines: io.StringIO) -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("sizing_site.test").exception("failed")
    [line] = log_lines.getvalue().splitlines()
    entry = json.loads(line)
    assert entry["message"] == "failed"
    assert entry["request_id"] == "-"
    assert "ValueError: boom" in entry["exc_info"]


@pytest.mark.parametrize(("fmt", "level"), [("xml", "INFO"), ("json", "LOUD"), ("", "INFO")])
def test_unknown_log_settings_stop_start_up(fmt: str, level: str) -> None:
    with pytest.raises(ImproperlyConfigured):
        logging_config(log_format=fmt, level=level)


def test_no_dsn_means_no_error_tracking() -> None:
    assert init_error_tracking("") is False


def test_a_dsn_without_sentry_sdk_warns_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "sentry_sdk", None)  # import now raises ImportError
    with caplog.at_level(logging.WARNING, logger="sizing_site.core.error_tracking"):
        assert init_error_tracking("https://key@errors.example/1") is False
    [record] = caplog.records
    assert "sentry_sdk is not installed" in record.getMessage()


def test_a_dsn_with_sentry_sdk_starts_it_without_personal_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[dict[str, object]] = []
    fake = types.ModuleType("sentry_sdk")
    fake.init = lambda **kwargs: calls.append(kwargs)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentry_sdk", fake)
    assert init_error_tracking("https://key@errors.example/1") is True
    [kwargs] = calls
    assert kwargs["dsn"] == "https://key@errors.example/1"
    assert kwargs["send_default_pii"] is False
    assert kwargs["traces_sample_rate"] == 0.0


@pytest.mark.django_db
def test_the_id_is_cleared_when_the_request_finishes(client: Client) -> None:
    client.get("/health/live/", HTTP_X_REQUEST_ID="gone-after")
    assert current_request_id() == "-"
