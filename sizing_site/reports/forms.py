from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from sizing_site.reports.models import NAME_MAX, NOTES_MAX

MAX_SHARE_DAYS = 3650  # ten years: the longest a share link may stay open


class NameForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=NAME_MAX, strip=True)


class SaveForm(NameForm):
    notes = forms.CharField(
        label=_("Notes"), max_length=NOTES_MAX, required=False, widget=forms.Textarea
    )
    tags = forms.CharField(label=_("Tags (comma-separated)"), max_length=300, required=False)
    model = forms.SlugField(widget=forms.HiddenInput)
    accelerator = forms.SlugField(widget=forms.HiddenInput)
    query = forms.CharField(widget=forms.HiddenInput, required=False, max_length=2000)

    def clean_tags(self) -> list[str]:
        raw: str = self.cleaned_data["tags"]
        return [t.strip() for t in raw.split(",") if t.strip()][:20]


class ShareForm(forms.Form):
    expires_at = forms.DateTimeField(
        label=_("Expires (optional)"),
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )

    def clean_expires_at(self) -> Any:
        value = self.cleaned_data["expires_at"]
        now = timezone.now()
        if value is not None and value <= now:
            raise forms.ValidationError(_("Choose a time in the future."))
        # The same ceiling as the API's expires_in_days: a date in the year 9999 is no expiry.
        if value is not None and value > now + timedelta(days=MAX_SHARE_DAYS):
            raise forms.ValidationError(
                _("Choose a time at most %(days)s days from now.") % {"days": MAX_SHARE_DAYS}
            )
        return value


class PolicyForm(forms.Form):
    public_links = forms.BooleanField(label=_("Allow public share links"), required=False)
