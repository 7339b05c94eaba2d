"""The price pages' forms: the offer filter and an organisation's feed upload."""

from __future__ import annotations

import logging
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from pricing import selectors
from pricing.fetchers.base import FetchError
from pricing.fetchers.feed import parse as feed_parse
from pricing.forms import outbound_url_validator
from pricing.models import CloudProvider

MAX_FEED_BYTES = 2 * 1024 * 1024
REFUSED_URL = _("This address cannot be used: a feed must be on a public http or https address.")
MAX_ROW_ERRORS = 10  # listed on the form; the rest are counted

logger = logging.getLogger(__name__)


class OfferFilterForm(forms.Form):
    accelerator = forms.ModelChoiceField(
        label=_("Accelerator"),
        required=False,
        queryset=selectors.offer_accelerators(),
        empty_label=_("All"),
        to_field_name="slug",
    )
    provider = forms.ModelChoiceField(
        label=_("Provider"),
        required=False,
        queryset=selectors.offer_providers(),
        empty_label=_("All"),
        to_field_name="slug",
    )
    # Any number from 0 (a bound, not a stored price: its decimals do not matter).
    max_price_per_gpu_hour = forms.DecimalField(
        label=_("Max price per GPU-hour"), required=False, min_value=0
    )


class FeedUploadForm(forms.Form):
    provider = forms.ModelChoiceField(
        label=_("Provider"), queryset=CloudProvider.objects.order_by("name")
    )
    url = forms.URLField(
        label=_("Feed URL"),
        required=False,
        assume_scheme="https",
        max_length=500,
        help_text=_("CSV or JSON on a public http or https address, fetched on schedule."),
    )
    file = forms.FileField(
        label=_("Or upload a file"), required=False, help_text=_("CSV or JSON, up to 2 MB.")
    )

    def clean_url(self) -> str:
        url: str = self.cleaned_data.get("url") or ""
        try:
            outbound_url_validator(url)
        except forms.ValidationError as exc:
            # One answer whatever the reason (no such host, a private address, a slow
            # resolver, another scheme): an organisation's admin must not learn from it
            # which host names exist inside the network. The reason goes to the log.
            logger.info("feed URL refused: %s", "; ".join(exc.messages))
            raise forms.ValidationError(REFUSED_URL, code="outbound") from None
        return url

    def clean_file(self) -> Any:
        upload = self.cleaned_data.get("file")
        if not upload:
            return upload
        if upload.size > MAX_FEED_BYTES:
            raise forms.ValidationError(_("The file is larger than 2 MB."))
        try:
            content = upload.read(MAX_FEED_BYTES + 1).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise forms.ValidationError(_("The file is not UTF-8 text.")) from None
        self.feed_content = content_check(content)
        return upload

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.has_error("url") or self.has_error("file"):
            return data
        upload, url = data.get("file"), data.get("url")
        if bool(upload) == bool(url):
            raise forms.ValidationError(_("Give either a URL or a file."))
        if upload:
            data["content"] = self.feed_content
        return data


def content_check(content: str) -> str:
    """Parse the upload now: a file with any bad row is refused whole, each row's field
    and reason listed, so what is stored is exactly what the admin meant."""
    try:
        parsed = feed_parse(content, now=timezone.now())
    except FetchError as exc:
        raise forms.ValidationError(str(exc)) from None
    if parsed.skipped:
        errors = [forms.ValidationError(reason) for reason in parsed.skipped[:MAX_ROW_ERRORS]]
        extra = len(parsed.skipped) - MAX_ROW_ERRORS
        if extra > 0:
            errors.append(
                forms.ValidationError(_("and %(n)d more rows with errors"), params={"n": extra})
            )
        raise forms.ValidationError(errors)
    return content
