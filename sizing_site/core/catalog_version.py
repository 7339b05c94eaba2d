"""Pin the catalog version for the whole request (catalog.sizing.cache.pinned_version):
read before any catalog row, so what the request computes is cached under the version its
rows belong to."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

from catalog.sizing.cache import pinned_version


class CatalogVersionMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        with pinned_version():
            return self.get_response(request)
