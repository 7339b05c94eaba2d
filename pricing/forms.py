from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from pricing import selectors
from pricing.models import CloudProvider

MAX_FEED_BYTES = 2 * 1024 * 1024


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
    max_price_per_gpu_hour = forms.DecimalField(
        label=_("Max price per GPU-hour"), required=False, min_value=0, decimal_places=4
    )


class FeedUploadForm(forms.Form):
    provider = forms.ModelChoiceField(
        label=_("Provider"), queryset=CloudProvider.objects.order_by("name")
    )
    url = forms.URLField(
        label=_("Feed URL"),
        required=False,
        assume_scheme="https",
        help_text=_("CSV or JSON, fetched on schedule."),
    )
    file = forms.FileField(
        label=_("Or upload a file"), required=False, help_text=_("CSV or JSON, up to 2 MB.")
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload, url = data.get("file"), data.get("url")
        if bool(upload) == bool(url):
            raise forms.ValidationError(_("Give either a URL or a file."))
        if upload:
            if upload.size > MAX_FEED_BYTES:
                raise forms.ValidationError(_("The file is larger than 2 MB."))
            try:
                data["content"] = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                raise forms.ValidationError(_("The file is not UTF-8 text.")) from None
        return data
