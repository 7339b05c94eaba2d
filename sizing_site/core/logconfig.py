"""Logging for every process (web, worker, beat, manage.py): one line per record, with the
request id, as plain text or as JSON lines (LOG_FORMAT=json) for a log collector. No line
carries a share link's token (ShareTokenFilter).
"""

from __future__ import annotations

import copy
import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.utils.log import DEFAULT_LOGGING
from rest_framework import exceptions as drf

from sizing_site.core.request_id import REDACTED, current_request_id

FORMATS = ("text", "json")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
# Attributes every LogRecord has; anything else was passed in `extra=` and is kept.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "request_id"}


class RequestIdFilter(logging.Filter):
    """Stamps each record with the current request id ("-" outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id()
        return True


# Refusals of the caller, not faults of the code: a user without the role, a visitor not
# logged in. Django logs each 403 from a page with its whole traceback.
REFUSALS = (PermissionDenied, drf.NotAuthenticated, drf.AuthenticationFailed, drf.PermissionDenied)


class RefusalWithoutTraceback(logging.Filter):
    """Keeps the one line ("Forbidden (Permission denied): /path") of a refused request
    (401, 403, or one of REFUSALS) and drops its traceback: a probe of every address would
    otherwise fill the log with tracebacks that say nothing. 5xx keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info:
            exc = record.exc_info[1]
            status = getattr(record, "status_code", None)
            if isinstance(exc, REFUSALS) or status in (401, 403):
                record.exc_info = None
                record.exc_text = None
        return True


# A public share address: a saved configuration's /r/<token>/ or a saved plan's
# /s/plan/<token>/, or an invitation's sign-up link /join/<token>/, behind a language
# prefix (/en/r/...) or not (which redirects there).
# The token is the report's only credential: whoever reads the log must not open it.
SHARE_ADDRESS = re.compile(r"(/r/|/s/plan/|/join/)[^/\s?#'\"<>]+")


def redact_share_tokens(text: str) -> str:
    """`text` with the token of every share address in it replaced by "<token>"."""
    return SHARE_ADDRESS.sub(lambda match: match.group(1) + REDACTED, text)


class ShareTokenFilter(logging.Filter):
    """Rewrites every share address (SHARE_ADDRESS) in a record's message, its arguments
    and its text `extra` fields. Django's "Not Found: /en/r/<token>/" warning, a CSRF
    refusal, runserver's request lines and our request log of an address no route matched
    (request_id.loggable_path redacts only what a route names) all carry the path."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_share_tokens(record.msg)
        args = record.args
        if isinstance(args, dict):
            # In place: a dict subclass (gunicorn's access-log atoms) keeps its lookups.
            for key, value in args.items():
                if isinstance(value, str):
                    args[key] = redact_share_tokens(value)
        elif isinstance(args, tuple):
            record.args = tuple(
                redact_share_tokens(arg) if isinstance(arg, str) else arg for arg in args
            )
        for key, value in list(vars(record).items()):
            if key not in _STANDARD and isinstance(value, str):
                setattr(record, key, redact_share_tokens(value))
        return True


class RequestLineOnce(logging.Filter):
    """Drops runserver's line for a request our request log (sizing_site.request, one line
    with the request id, status and duration) already has: in development each request was
    printed twice. Static files are served before the middleware, so their lines stay, as
    do runserver's other messages."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.msg != '"%s" %s %s' or not isinstance(args, tuple) or not args:
            return True  # not a request line: the server's own message
        parts = str(args[0]).split(" ")
        path = parts[1] if len(parts) > 1 else ""
        return path.startswith("/" + settings.STATIC_URL.lstrip("/"))


def _loggable(value: object) -> str:
    """An `extra` value JSON cannot encode, as text: Django's `request` (its repr has the
    path)."""
    return redact_share_tokens(str(value))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, `extra` fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", current_request_id()),
        }
        entry.update((k, v) for k, v in vars(record).items() if k not in _STANDARD)
        if record.exc_info:
            entry["exc_info"] = redact_share_tokens(self.formatException(record.exc_info))
        # default: an `extra` value that JSON cannot encode must not lose the line.
        return json.dumps(entry, default=_loggable, ensure_ascii=False)


def logging_config(*, log_format: str, level: str) -> dict[str, Any]:
    """The LOGGING setting; raises on a format or level we do not know, as env.py does."""
    if log_format not in FORMATS:
        raise ImproperlyConfigured(f"LOG_FORMAT must be one of {', '.join(FORMATS)}")
    if level.upper() not in LEVELS:
        raise ImproperlyConfigured(f"LOG_LEVEL must be one of {', '.join(LEVELS)}")
    formatter: dict[str, Any] = (
        {"()": JsonFormatter} if log_format == "json" else {"format": TEXT_FORMAT}
    )
    # runserver's request lines, as Django sets them up, plus the share-token filter.
    server = copy.deepcopy(DEFAULT_LOGGING["loggers"]["django.server"])
    server["filters"] = ["share_tokens", "request_line_once"]
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": RequestIdFilter},
            "refusal_without_traceback": {"()": RefusalWithoutTraceback},
            "share_tokens": {"()": ShareTokenFilter},
            "request_line_once": {"()": RequestLineOnce},
        },
        "formatters": {
            "default": formatter,
            "django.server": copy.deepcopy(DEFAULT_LOGGING["formatters"]["django.server"]),
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                # Any logger's lines reach the console through this: none keeps a token.
                "filters": ["request_id", "share_tokens"],
                "formatter": "default",
            },
            "django.server": copy.deepcopy(DEFAULT_LOGGING["handlers"]["django.server"]),
        },
        # A logger's own filter runs before any handler (the console, pytest's, Sentry's
        # logging integration), but only for its own records, not its children's: each
        # logger that writes a request's path is named. Django logs responses to
        # django.request, CSRF refusals to django.security.csrf, runserver's lines to
        # django.server (which does not propagate).
        "loggers": {
            "django.request": {"filters": ["share_tokens", "refusal_without_traceback"]},
            "django.security.csrf": {"filters": ["share_tokens"]},
            "django.server": server,
            "sizing_site.request": {"filters": ["share_tokens"]},
        },
        "root": {"handlers": ["console"], "level": level.upper()},
    }
