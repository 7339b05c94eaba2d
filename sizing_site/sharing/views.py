"""The web side of every share link: a new link's address (shown once) and the public page
behind a token. The pages' own views (reports.views.shared, planner.saved.shared) resolve
the token (selectors.share_link_resolve) and build their context; the rest is here."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse, translate_url
from django.utils import translation
from django.utils.cache import add_never_cache_headers

from sizing_site.sharing.models import ShareLinkBase


def share_address(request: HttpRequest, link: ShareLinkBase) -> str:
    """A new link's public address. Only a link just made carries its token (the database
    keeps its SHA-256), so the page or answer that makes it is the only one to show it.
    The address has no language prefix: LocaleMiddleware sends each reader to the page in
    their own language (cookie, then browser), not in the sharer's."""
    path = reverse(link.shared_url_name, args=[link.token])
    prefix = translation.get_language_from_path(path)
    if prefix:
        path = path.removeprefix(f"/{prefix}")
    return request.build_absolute_uri(path)


def shared_languages(request: HttpRequest) -> dict[str, list[dict[str, Any]]]:
    """The page's address in every language, for the reader's language links."""
    current = translation.get_language()
    path = request.get_full_path()
    return {
        "shared_languages": [
            {
                "code": code,
                "name": translation.get_language_info(code)["name_local"],
                "url": translate_url(path, code),
                "current": code == current,
            }
            for code, _name in settings.LANGUAGES
        ]
    }


def shared_page(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    """The public, read-only page behind a share link (`template` extends
    sharing/shared_base.html: no org navigation, nothing that needs a login)."""
    languages = shared_languages(request)
    response = render(request, template, {**context, "shared": True, **languages})
    # The token is the credential: no shared cache or back button may keep a copy, no
    # search engine list it, no outbound Referer carry it.
    add_never_cache_headers(response)
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    return response
