"""Whose catalog rows a page reads: the public catalog plus the own models and cards of the
organisations the viewer belongs to (catalog.scoping.CatalogManager). The configurator,
the explore pages and the fleet page share it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from django.http import HttpRequest
from rest_framework.request import Request

from sizing_site.tenancy.models import Organization
from sizing_site.tenancy.selectors import membership_list_for_user, viewer_organizations


@dataclass(frozen=True)
class Viewer:
    """The organisations whose own rows the page shows, and what the page's template gets
    so that the memberships are read once (the base template's org switcher)."""

    organizations: list[Organization]
    context: dict[str, object] = field(default_factory=dict)


def page_viewer(request: HttpRequest) -> Viewer:
    """viewer_organizations(request) for a page signed in with a session: one query for
    the memberships, which the org switcher (user_memberships) reuses instead of reading
    them again. An API token's request, or one already read, goes through
    viewer_organizations as it is."""
    if getattr(request, "auth", None) is not None or hasattr(request, "_viewer_organizations"):
        return Viewer(viewer_organizations(request))
    memberships = membership_list_for_user(user=request.user)
    organizations = [m.organization for m in memberships]
    # What viewer_organizations keeps for the rest of the request.
    request._viewer_organizations = organizations  # type: ignore[attr-defined]
    return Viewer(organizations, {"user_memberships": memberships})


T = TypeVar("T")


def public_first(
    request: HttpRequest | Request,
    lookup: Callable[[Sequence[Organization]], T],
    missing: tuple[type[Exception], ...],
) -> T:
    """`lookup` over the public catalog, as every viewer's request reads it; only when it
    finds nothing (one of `missing`), again with the viewer's organisations' own rows.
    Slugs are unique over the whole table, so the answer is the one a single lookup with
    the organisations gives, and a viewer of public rows costs no membership query."""
    try:
        return lookup(())
    except missing:
        # An API request (DRF's) reads its user and token like the page's request.
        organizations = viewer_organizations(cast(HttpRequest, request))
        if not organizations:
            raise
    return lookup(organizations)
