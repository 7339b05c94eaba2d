"""Form checks that pricing's admin and the web layer's feed form share."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.utils.translation import gettext_lazy as _

from pricing import outbound
from pricing.fetchers.base import FetchError, spot_above_on_demand


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


def spot_price_check(*, spot: Decimal | None, on_demand: Decimal | None) -> None:
    """Refuse a spot price above the on-demand price of the same offer: spot capacity is the
    interruptible discount on that instance, so a higher figure is a transcription error
    (another SKU's price), as the feed import (pricing.fetchers.base.offer_check) says too."""
    if spot_above_on_demand(spot, on_demand):
        raise forms.ValidationError(
            _(
                "The spot price (%(spot)s) is above the on-demand price (%(on_demand)s): spot "
                "is the interruptible discount on the same instance."
            ),
            code="spot_above_on_demand",
            params={"spot": spot, "on_demand": on_demand},
        )
