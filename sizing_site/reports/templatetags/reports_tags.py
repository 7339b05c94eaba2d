from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django import template

from sizing_site.tenancy.models import Membership, Role

register = template.Library()


@register.filter
def can_save(memberships: Iterable[Membership] | Callable[[], Any]) -> list[Membership]:
    """The memberships whose role may save configurations (editor and up)."""
    rows = memberships() if callable(memberships) else memberships
    return [m for m in rows if m.has_role(Role.EDITOR)]
