from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.utils.translation import gettext_lazy as _

from sizing_site.tenancy.models import Organization
from sizing_site.tenancy.selectors import membership_list_for_user

MAX_DAYS = 3650


class TokenForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=100, strip=True)
    expires_in_days = forms.IntegerField(
        label=_("Expires after (days)"),
        min_value=1,
        max_value=MAX_DAYS,
        required=False,
        help_text=_("Leave empty for a token that does not expire."),
    )
    organization = forms.ModelChoiceField(
        label=_("Organization"),
        queryset=Organization.objects.none(),
        required=False,
        empty_label=_("All my organizations"),
        help_text=_("Limit the token to one organization's routes."),
    )
    read_only = forms.BooleanField(
        label=_("Read-only"),
        required=False,
        help_text=_("It can read and estimate, but not change anything."),
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["organization"]
        assert isinstance(field, forms.ModelChoiceField)
        # Only organizations the user belongs to, through the tenancy helpers.
        mine = [m.organization_id for m in membership_list_for_user(user=user)]
        field.queryset = Organization.objects.filter(pk__in=mine).order_by("name")
