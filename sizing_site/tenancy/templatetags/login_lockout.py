from __future__ import annotations

import math
from datetime import timedelta

from django import template

register = template.Library()


@register.filter
def whole_minutes(value: timedelta | None) -> int:
    """A cool-off as whole minutes, rounded up so the page never promises too early."""
    if value is None:
        return 0
    return math.ceil(value.total_seconds() / 60)
