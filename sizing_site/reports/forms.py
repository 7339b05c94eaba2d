from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from sizing_site.reports.models import NAME_MAX, NOTES_MAX


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
