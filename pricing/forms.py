"""Form checks that pricing's admin and the web layer's feed form share."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from pricing import outbound
from pricing.fetchers.base import FetchError


def outbound_url_validator(url: str) -> None:
    """The outbound policy at save time: the same check the worker makes before fetching."""
    if not url:
        return
    try:
        outbound.url_check(url)
    except FetchError as exc:
        raise forms.ValidationError(
            _("This address cannot be used: %(reason)s."), code="outbound", params={"reason": exc}
        ) from None
