"""A time limit for sizing work that a caller sets around it (the API's work budget): long
loops (a sweep's cards or models, a batch's items) call `check()` between their points and
stop once the limit has passed, so a request cannot keep a worker busy past it.

The limit is a context variable: pages and tasks that set none are never stopped, and
threads serving other requests keep their own. A loop stopped by DeadlinePassed keeps only
whole entries in the sizing cache (the pairs of a card sweep it finished, never a table),
so asking again goes on from there and no request reads a partial table.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deadline: ContextVar[float | None] = ContextVar("sizing_deadline", default=None)
_limit_s: ContextVar[float] = ContextVar("sizing_deadline_seconds", default=0.0)


class DeadlinePassed(Exception):
    """The caller's time limit passed before the work was done."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"time limit of {seconds:g} s passed")
        self.seconds = seconds


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Work inside may run `seconds` from now (monotonic clock); nested limits keep the
    earlier end."""
    end = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(end if outer is None else min(end, outer))
    limit = _limit_s.set(seconds if outer is None or end < outer else _limit_s.get())
    try:
        yield
    finally:
        _limit_s.reset(limit)
        _deadline.reset(token)


def passed() -> bool:
    """Whether a limit is set and has passed."""
    end = _deadline.get()
    return end is not None and time.monotonic() >= end


def check() -> None:
    """Raise DeadlinePassed when the limit has passed; nothing without a limit."""
    if passed():
        raise DeadlinePassed(_limit_s.get())
