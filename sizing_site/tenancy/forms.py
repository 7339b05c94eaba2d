from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.utils.translation import gettext_lazy as _

from sizing_site.tenancy.models import Role


class InvitationForm(forms.Form):
    identifier = forms.CharField(label=_("Username or e-mail"), max_length=254, strip=True)
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices, initial=Role.VIEWER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices)


class SignupForm(UserCreationForm):
    """Username and password for an account made from a sign-up link. The form validates
    only (the name is free, the password passes AUTH_PASSWORD_VALIDATORS);
    services.signup_complete makes the account."""
