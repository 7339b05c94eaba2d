"""The share form (a new link's expiry) and the policy form, for every share page; the
share APIs read their JSON through the same ShareForm (sharing.api.new_link_expiry)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from sizing_site.sharing.selectors import public_links_allowed
from sizing_site.tenancy.access import Tenant

MAX_SHARE_DAYS = 3650  # ten years: the longest a share link may stay open


class ShareForm(forms.Form):
    expires_at = forms.DateTimeField(
        label=gettext_lazy("Expires (optional)"),
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )

    def clean_expires_at(self) -> Any:
        value = self.cleaned_data["expires_at"]
        now = timezone.now()
        if value is not None and value <= now:
            raise forms.ValidationError(gettext_lazy("Choose a time in the future."))
        # The same ceiling as the API's expires_in_days: a date in the year 9999 is no expiry.
        if value is not None and value > now + timedelta(days=MAX_SHARE_DAYS):
            raise forms.ValidationError(
                _("Choose a time at most %(days)s days from now.") % {"days": MAX_SHARE_DAYS}
            )
        return value


def share_form(data: Any, *, tenant: Tenant) -> ShareForm:
    """ShareForm bound to `data`, with the org's policy as its error when public links are
    off: every share page and API refuses a new link the same way (`is_valid()`)."""
    form = ShareForm(data)
    if not public_links_allowed(tenant=tenant):
        form.add_error(None, _("Public share links are turned off for this organization."))
    return form


class PolicyForm(forms.Form):
    public_links = forms.BooleanField(
        label=gettext_lazy("Allow public share links"), required=False
    )
