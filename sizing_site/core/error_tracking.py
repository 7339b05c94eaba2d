"""Optional error tracking: a Sentry-compatible DSN turns it on when sentry_sdk is installed.

sentry-sdk is not a dependency: an installation that wants it installs it. A DSN without
the package must not stop start-up, but must not fail silently either.
"""

from __future__ import annotations

import importlib
import logging

logger = logging.getLogger(__name__)


def init_error_tracking(dsn: str) -> bool:
    """Start the SDK for `dsn`; True when it was started."""
    if not dsn:
        return False
    try:
        sentry_sdk = importlib.import_module("sentry_sdk")
    except ImportError:
        logger.warning(
            "ERROR_TRACKING_DSN is set but sentry_sdk is not installed: error tracking is off"
        )
        return False
    # No personal data (user names, addresses, cookies) leaves the installation by default.
    sentry_sdk.init(dsn=dsn, send_default_pii=False, traces_sample_rate=0.0)
    return True
