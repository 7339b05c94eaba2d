"""No log line carries a share link's token: Django's "Not Found: /en/r/<token>/", a CSRF
refusal, our request log, runserver's request lines (sizing_site.core.logconfig,
ShareTokenFilter). gunicorn's access log: tests/sizing_site/core/test_gunicorn.py."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from sizing_site.core.logconfig import JsonFormatter, ShareTokenFilter, redact_share_tokens

# Shaped like a real token (secrets.token_urlsafe(32): 43 URL-safe characters), unknown.
TOKEN = "Zq3-secret_share-token-0123456789abcdefghij"
# A configuration's link and a plan's, behind a language prefix and without one (which
# redirects to it), with a query string.
ADDRESSES = [
    f"/en/r/{TOKEN}/",
    f"/de/r/{TOKEN}/?utm=x",
    f"/r/{TOKEN}/",
    f"/en/s/plan/{TOKEN}/",
    f"/zh-hans/s/plan/{TOKEN}/",
    f"/s/plan/{TOKEN}/",
]


@pytest.mark.django_db
def test_requests_for_a_missing_share_link_log_no_token(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        statuses = [client.get(address).status_code for address in ADDRESSES]
        # A POST without a CSRF token: django.security.csrf logs the path too.
        refused = Client(enforce_csrf_checks=True).post(f"/en/r/{TOKEN}/")
    assert statuses == [404, 404, 302, 404, 404, 302]
    assert refused.status_code == 403
    messages = [record.getMessage() for record in caplog.records]
    # The lines are still written, each with the address it was about.
    assert "Not Found: /en/r/<token>/" in messages
    assert "Not Found: /en/s/plan/<token>/" in messages
    assert "GET /r/<token>/ 302" in messages and "GET /en/s/plan/<token>/ 404" in messages
    assert "Forbidden (CSRF cookie not set.): /en/r/<token>/" in messages
    assert TOKEN not in caplog.text
    for record in caplog.records:
        # As the console writes it in either format, `extra` fields (the path, Django's
        # request object) included.
        assert TOKEN not in record.getMessage(), record.name
        assert TOKEN not in JsonFormatter().format(record), record.name
        assert TOKEN not in str(getattr(record, "path", "")), record.name


def test_runservers_request_lines_are_filtered_and_still_written() -> None:
    # django.server does not propagate to the root logger (nor to pytest's caplog): it
    # keeps Django's own handler, behind the filter.
    server = logging.getLogger("django.server")
    assert not server.propagate and server.handlers
    assert any(isinstance(f, ShareTokenFilter) for f in server.filters)
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    server.addHandler(handler)
    try:
        # As django.core.servers.basehttp.WSGIRequestHandler.log_message writes it. A page's
        # line is left to our request log (logconfig.RequestLineOnce); a static file's stays.
        server.warning('"%s" %s %s', f"GET /en/s/plan/{TOKEN}/ HTTP/1.1", "404", "179")
        server.warning('"%s" %s %s', f"GET /static/r/{TOKEN}/x.css HTTP/1.1", "404", "179")
    finally:
        server.removeHandler(handler)
    assert lines == ['"GET /static/r/<token>/x.css HTTP/1.1" 404 179']


def test_the_filter_rewrites_message_arguments_and_extra_text() -> None:
    record = logging.makeLogRecord(
        {
            "msg": f"seen /en/r/{TOKEN}/ and %s %d",
            "args": (f"/s/plan/{TOKEN}", 3),
            "referer": f"https://portal.example/it/r/{TOKEN}/",
        }
    )
    ShareTokenFilter().filter(record)
    assert record.getMessage() == "seen /en/r/<token>/ and /s/plan/<token> 3"
    assert record.referer == "https://portal.example/it/r/<token>/"  # type: ignore[attr-defined]
    # Mapping arguments (gunicorn's access log): rewritten in place.
    atoms = {"r": f"GET /en/r/{TOKEN}/ HTTP/1.1", "s": 200}
    record = logging.makeLogRecord({"msg": "%(r)s %(s)s", "args": atoms})
    ShareTokenFilter().filter(record)
    assert record.getMessage() == "GET /en/r/<token>/ HTTP/1.1 200"
    # Other addresses are left as they are; "<token>" stays "<token>".
    for text in ("/en/reports/links/", "/en/o/demo/planner/saved/", "GET /en/r/<token>/ 200"):
        assert redact_share_tokens(text) == text
