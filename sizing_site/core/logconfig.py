"""Logging for every process (web, worker, beat, manage.py): one line per record, with the
request id, as plain text or as JSON lines (LOG_FORMAT=json) for a log collector.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from rest_framework import exceptions as drf

from sizing_site.core.request_id import current_request_id

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
            entry["exc_info"] = self.formatException(record.exc_info)
        # default=str: an `extra` value that JSON cannot encode must not lose the line.
        return json.dumps(entry, default=str, ensure_ascii=False)


def logging_config(*, log_format: str, level: str) -> dict[str, Any]:
    """The LOGGING setting; raises on a format or level we do not know, as env.py does."""
    if log_format not in FORMATS:
        raise ImproperlyConfigured(f"LOG_FORMAT must be one of {', '.join(FORMATS)}")
    if level.upper() not in LEVELS:
        raise ImproperlyConfigured(f"LOG_LEVEL must be one of {', '.join(LEVELS)}")
    formatter: dict[str, Any] = (
        {"()": JsonFormatter} if log_format == "json" else {"format": TEXT_FORMAT}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": RequestIdFilter},
            "refusal_without_traceback": {"()": RefusalWithoutTraceback},
        },
        "formatters": {"default": formatter},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "filters": ["request_id"],
                "formatter": "default",
            }
        },
        # A logger's own filter runs before any handler (the console, pytest's, Sentry's
        # logging integration): Django logs responses to django.request.
        "loggers": {"django.request": {"filters": ["refusal_without_traceback"]}},
        "root": {"handlers": ["console"], "level": level.upper()},
    }
