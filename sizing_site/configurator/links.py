"""The configurator's addresses, built for every page that links to it (the explore
templatetag configure_url, the quant matrix's rows)."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from django.conf import settings
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, reverse
from django.utils.http import urlencode
from django.utils.translation import get_language

# Paths kept per process (_configure_path): a few hundred bytes each, so at most a
# megabyte or so, whatever the catalog's size.
CONFIGURE_PATHS = 4096


def configure_url(
    model_slug: str,
    accelerator_slug: str,
    query: Mapping[str, str] | None = None,
    **params: str | int | None,
) -> str:
    """The configurator's address for this pair with a saved `query` and then `params` as
    its query string, in that order; a param without a value (None, or "" for a missing
    template variable) is left out, and so is the "?" of an empty query. "" while the
    configurator is not installed."""
    return with_query(configure_path(model_slug, accelerator_slug), query_string(query, **params))


def configure_path(model_slug: str, accelerator_slug: str) -> str:
    """The configurator's path for this pair in the active language ("" while the
    configurator is not installed)."""
    try:
        return _configure_path(
            model_slug,
            accelerator_slug,
            get_language(),
            get_script_prefix(),
            get_urlconf() or settings.ROOT_URLCONF,
        )
    except NoReverseMatch:
        return ""


def query_string(query: Mapping[str, str] | None = None, **params: str | int | None) -> str:
    """configure_url's query string (no "?"): `query`, then the `params` that have a value."""
    given = {k: v for k, v in params.items() if v is not None and v != ""}
    return urlencode({**(query or {}), **given})


def with_query(path: str, encoded: str) -> str:
    """`path` with a query string (query_string) when there is one; "" without a path."""
    if not path:
        return ""
    return f"{path}?{encoded}" if encoded else path


@functools.lru_cache(maxsize=CONFIGURE_PATHS)
def _configure_path(
    model_slug: str, accelerator_slug: str, language: str | None, prefix: str, urlconf: str | None
) -> str:
    """The configurator's path for a pair: one URL reverse per pair, language (the i18n
    prefix), script prefix and URLconf, which is all a reverse reads. A page links to the
    same few pairs dozens of times (the quant matrix: two a row), and a reverse costs more
    than the rest of a link."""
    return reverse("configurator:configure", args=[model_slug, accelerator_slug], urlconf=urlconf)
