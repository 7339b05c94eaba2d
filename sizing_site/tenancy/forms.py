from django import forms
from django.utils.translation import gettext_lazy as _

from sizing_site.tenancy.models import Role


class InvitationForm(forms.Form):
    identifier = forms.CharField(label=_("Username or e-mail"), max_length=254, strip=True)
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices, initial=Role.VIEWER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices)
