from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from catalog.hub import MAX_REVISION, HubError, hub_repo_id, hub_revision
from catalog.limits import MAX_JSON_DEPTH, has_lone_surrogate, json_depth
from catalog.models import Architecture, LLMModel, Segment, WeightsAvailability
from catalog.services.configs import MAX_CONFIG_BYTES

# A GGUF header (metadata, tokenizer, tensor infos) fits in 16 MB even for Llama-3's
# 128k-token vocabulary with 280k merges (~8 MB); the browser sends no more than this.
GGUF_HEADER_BYTES = 16 * 1024 * 1024
# Whole files are accepted only up to this size (small models, tests); beyond it the
# page must send the header part.
MAX_WHOLE_GGUF_BYTES = 64 * 1024 * 1024


class BoundedJSONField(forms.JSONField):
    """Django's JSONField with the size and nesting caps of catalog.limits: json.loads
    recurses once per level, and a few thousand brackets raise RecursionError (a 500)."""

    max_bytes = 1_000_000

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and not self.disabled:
            if len(value) > self.max_bytes:
                raise forms.ValidationError(_("At most 1 MB of JSON."), code="too_large")
            if json_depth(value) > MAX_JSON_DEPTH:
                raise forms.ValidationError(
                    _("JSON nested deeper than %(n)s levels."),
                    params={"n": MAX_JSON_DEPTH},
                    code="too_deep",
                )
        data = super().to_python(value)
        if has_lone_surrogate(data):
            raise forms.ValidationError(
                _("JSON with an unpaired surrogate (such as \\ud800) is not text."),
                code="surrogate",
            )
        return data


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
    # The real file's size (File.size in the browser); 1 PiB is far past any model file.
    file_size = forms.IntegerField(
        required=False, min_value=1, max_value=2**50, widget=forms.HiddenInput
    )

    def clean(self) -> dict[str, Any]:
        """Both kinds of upload have a cap: a header part is at most GGUF_HEADER_BYTES
        (what the page's script sends) and comes with the real file's size; a whole file
        is at most MAX_WHOLE_GGUF_BYTES."""
        data = super().clean() or {}
        upload = data.get("file")
        if not upload:
            return data
        if data.get("header_only"):
            if upload.size > GGUF_HEADER_BYTES:
                raise forms.ValidationError(_("A header part is at most 16 MB."))
            if data.get("file_size") is None or data["file_size"] < upload.size:
                raise forms.ValidationError(
                    _("A header part must come with the size of the whole file.")
                )
        elif upload.size > MAX_WHOLE_GGUF_BYTES:
            raise forms.ValidationError(
                _("This file is too large to upload whole; enable JavaScript to send its header.")
            )
        return data


class ConfigImportForm(forms.Form):
    text = forms.CharField(
        label=_("config.json"),
        required=False,
        widget=forms.Textarea,
        max_length=MAX_CONFIG_BYTES,
        strip=False,
    )
    file = forms.FileField(label=_("or upload config.json"), required=False)
    slug = forms.SlugField(label=_("Model slug"), required=False)
    hf_repo = forms.CharField(label=_("Hugging Face repo"), required=False, max_length=200)
    name = forms.CharField(label=_("Name"), required=False, max_length=120)
    replace = forms.BooleanField(
        label=_("Replace a different architecture"),
        required=False,
        help_text=_("Needed to overwrite a model whose stored config has other layers or width."),
    )

    def clean_file(self) -> Any:
        upload = self.cleaned_data.get("file")
        # The size Django counted while receiving it: checked before a byte is read.
        if upload and upload.size > MAX_CONFIG_BYTES:
            raise forms.ValidationError(_("A config.json is at most 1 MB."), code="too_large")
        return upload

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("text") and not data.get("file"):
            raise forms.ValidationError(_("Paste a config.json or upload one."))
        return data

    def config_text(self) -> str | bytes:
        """The pasted text, or the upload's bytes (at most MAX_CONFIG_BYTES, checked)."""
        upload = self.cleaned_data["file"]
        return upload.read(MAX_CONFIG_BYTES + 1) if upload else self.cleaned_data["text"]


class HubImportForm(forms.Form):
    """A Hugging Face repository to import: its id (or address) and a revision (staff's
    admin import and the organisation's own import share it)."""

    repo_id = forms.CharField(
        label=_("Hugging Face repository"),
        max_length=200,
        help_text=_("owner/name, e.g. Qwen/Qwen3-8B, or the repository's address."),
    )
    revision = forms.CharField(
        label=_("Revision"),
        required=False,
        max_length=MAX_REVISION,
        help_text=_("A branch, tag or commit; blank: main."),
    )

    def clean_repo_id(self) -> str:
        try:
            return hub_repo_id(self.cleaned_data["repo_id"])
        except HubError as exc:
            raise forms.ValidationError(exc.message, code="invalid") from None

    def clean_revision(self) -> str:
        try:
            return hub_revision(self.cleaned_data["revision"])
        except HubError as exc:
            raise forms.ValidationError(exc.message, code="invalid") from None
