"""The web side of every share link: a new link's address (shown once) and the public page
behind a token. The pages' own views (reports.views.shared, planner.saved.shared) resolve
the token (selectors.share_link_resolve) and build their context; the rest is here."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers

from sizing_site.sharing.models import ShareLinkBase


def share_address(request: HttpRequest, link: ShareLinkBase) -> str:
    """A new link's public address. Only a link just made carries its token (the database
    keeps its SHA-256), so the page or answer that makes it is the only one to show it."""
    return request.build_absolute_uri(reverse(link.shared_url_name, args=[link.token]))


def shared_page(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    """The public, read-only page behind a share link (`template` extends
    sharing/shared_base.html: no org navigation, nothing that needs a login)."""
    response = render(request, template, {**context, "shared": True})
    # The token is the credential: no shared cache or back button may keep a copy, no
    # search engine list it, no outbound Referer carry it.
    add_never_cache_headers(response)
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    return response
