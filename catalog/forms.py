from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from catalog.models import Architecture, LLMModel, Segment, WeightsAvailability

# A GGUF header (metadata, tokenizer, tensor infos) fits in 16 MB even for Llama-3's
# 128k-token vocabulary with 280k merges (~8 MB); the browser sends no more than this.
GGUF_HEADER_BYTES = 16 * 1024 * 1024
# Whole files are accepted only up to this size (small models, tests); beyond it the
# page must send the header part.
MAX_WHOLE_GGUF_BYTES = 64 * 1024 * 1024


def _choices(values: list[str]) -> list[tuple[str, Any]]:
    return [("", _("All")), *((v, v) for v in values)]


class ModelFilterForm(forms.Form):
    q = forms.CharField(label=_("Search"), required=False, max_length=100)
    family = forms.ChoiceField(label=_("Family"), required=False)
    publisher = forms.ChoiceField(label=_("Publisher"), required=False)
    architecture = forms.ChoiceField(
        label=_("Architecture"), required=False, choices=[("", _("All")), *Architecture.choices]
    )
    weights_availability = forms.ChoiceField(
        label=_("Weights"), required=False, choices=[("", _("All")), *WeightsAvailability.choices]
    )

    def __init__(self, *args: Any, families: list[str], publishers: list[str], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fields["family"].choices = _choices(families)  # type: ignore[attr-defined]
        self.fields["publisher"].choices = _choices(publishers)  # type: ignore[attr-defined]


class AcceleratorFilterForm(forms.Form):
    q = forms.CharField(label=_("Search"), required=False, max_length=100)
    vendor = forms.ChoiceField(label=_("Vendor"), required=False)
    segment = forms.ChoiceField(
        label=_("Segment"), required=False, choices=[("", _("All")), *Segment.choices]
    )
    memory_min_gb = forms.FloatField(label=_("Memory at least (GiB)"), required=False, min_value=0)
    curated = forms.NullBooleanField(
        label=_("Curated"),
        required=False,
        widget=forms.Select(
            choices=[("", _("All")), ("true", _("Curated only")), ("false", _("Imported only"))]
        ),
    )

    def __init__(self, *args: Any, vendors: list[str], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fields["vendor"].choices = _choices(vendors)  # type: ignore[attr-defined]


class GGUFUploadForm(forms.Form):
    model = forms.ModelChoiceField(
        label=_("Model"),
        queryset=LLMModel.objects.only("slug", "name").order_by("name"),
        to_field_name="slug",
        required=False,
        help_text=_("Leave empty to match the model the file names."),
    )
    file = forms.FileField(label=_("GGUF file"))
    header_only = forms.BooleanField(required=False, widget=forms.HiddenInput)
    file_size = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("file")
        if upload and not data.get("header_only") and upload.size > MAX_WHOLE_GGUF_BYTES:
            raise forms.ValidationError(
                _("This file is too large to upload whole; enable JavaScript to send its header.")
            )
        return data


class ConfigImportForm(forms.Form):
    text = forms.CharField(label=_("config.json"), required=False, widget=forms.Textarea)
    file = forms.FileField(label=_("or upload config.json"), required=False)
    slug = forms.SlugField(label=_("Model slug"), required=False)
    hf_repo = forms.CharField(label=_("Hugging Face repo"), required=False, max_length=200)
    name = forms.CharField(label=_("Name"), required=False, max_length=120)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("text") and not data.get("file"):
            raise forms.ValidationError(_("Paste a config.json or upload one."))
        return data
