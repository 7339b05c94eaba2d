"""Forms of the own-catalog pages (and the API, which validates through them)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.validators import MaxValueValidator
from django.utils.translation import gettext_lazy as _

from catalog import forms as catalog_forms
from catalog.models import Accelerator
from catalog.services.configs import MAX_CONFIG_BYTES
from sizing_site.owncatalog.services import ACCELERATOR_FIELDS

# The GGUF header part the page's script sends (catalog's import page sends the same),
# and the largest whole file accepted without it (a tiny or test model).
GGUF_HEADER_BYTES = 16 * 1024 * 1024
MAX_WHOLE_GGUF_BYTES = 64 * 1024 * 1024
# Largest body of the new-model page: a whole small GGUF, or pasted text (a browser may
# escape a character to 3 bytes) and a config upload, plus the small fields.
MAX_MODEL_POST_BYTES = max(MAX_WHOLE_GGUF_BYTES, 4 * MAX_CONFIG_BYTES) + 64 * 1024


class OwnModelForm(forms.Form):
    """A new own model: its name, and a config.json (pasted or uploaded) or a GGUF file
    (its header part and the real file's size, or a small file whole)."""

    name = forms.CharField(label=_("Name"), max_length=120, strip=True)
    hf_repo = forms.CharField(
        label=_("Base model or repository"),
        required=False,
        max_length=200,
        help_text=_("Optional: the Hugging Face repo it is, or is fine-tuned from."),
    )
    notes = forms.CharField(
        label=_("Notes"), required=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    config_text = forms.CharField(
        label=_("config.json"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 8}),
        max_length=MAX_CONFIG_BYTES,
        strip=False,
    )
    config_file = forms.FileField(label=_("or upload config.json"), required=False)
    gguf_file = forms.FileField(label=_("or a GGUF file"), required=False)
    header_only = forms.BooleanField(required=False, widget=forms.HiddenInput)
    # The real file's size (File.size in the browser); 1 PiB is far past any model file.
    file_size = forms.IntegerField(
        required=False, min_value=1, max_value=2**50, widget=forms.HiddenInput
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    def clean_config_file(self) -> Any:
        upload = self.cleaned_data.get("config_file")
        if upload and upload.size > MAX_CONFIG_BYTES:
            raise forms.ValidationError(_("A config.json is at most 1 MB."), code="too_large")
        return upload

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        given = [k for k in ("config_text", "config_file", "gguf_file") if data.get(k)]
        if not given:
            raise forms.ValidationError(_("Paste a config.json, or upload one or a GGUF file."))
        if len(given) > 1:
            raise forms.ValidationError(_("Give one of them: a config.json or a GGUF file."))
        upload = data.get("gguf_file")
        if upload:
            if data.get("header_only"):
                if upload.size > GGUF_HEADER_BYTES:
                    self.add_error("gguf_file", _("A header part is at most 16 MB."))
                elif data.get("file_size") is None or data["file_size"] < upload.size:
                    self.add_error(
                        "gguf_file", _("A header part must come with the size of the whole file.")
                    )
            elif upload.size > MAX_WHOLE_GGUF_BYTES:
                self.add_error(
                    "gguf_file",
                    _(
                        "This file is too large to upload whole; enable JavaScript to send "
                        "its header."
                    ),
                )
        return data

    def config_source(self) -> str | bytes:
        """The pasted text, or the uploaded config's bytes (at most MAX_CONFIG_BYTES)."""
        upload = self.cleaned_data.get("config_file")
        return upload.read(MAX_CONFIG_BYTES + 1) if upload else self.cleaned_data["config_text"]


class HubImportForm(catalog_forms.HubImportForm):
    """A Hugging Face repository to import into the organisation's own models."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)


class OwnModelEditForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=120, strip=True)
    notes = forms.CharField(
        label=_("Notes"), required=False, widget=forms.Textarea(attrs={"rows": 3})
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)


UPPER_BOUNDS: dict[str, float] = {
    "memory_gb": 16_384,
    "memory_gib": 16_384,
    "fp16_tflops": 100_000,
    "fp8_tflops": 100_000,
    "fp4_tflops": 100_000,
    "tdp_w": 100_000,
    "interconnect_gbps": 100_000,
    "price_usd": 100_000_000,
}


class OwnAcceleratorForm(forms.ModelForm):
    """An accelerator's specs; the model's validators bound each figure."""

    class Meta:
        model = Accelerator
        fields = ACCELERATOR_FIELDS
        widgets = {"notes": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        for name in ("memory_gb", "bandwidth_gbps", "fp16_tflops"):
            self.fields[name].required = True
        # Upper bounds that catch unit slips (MB entered as GB) and keep every figure finite
        # for the estimator; the catalog's own rows have no such card (the largest board,
        # a unified-memory system, holds 512 GB).
        for name, most in UPPER_BOUNDS.items():
            field = self.fields[name]
            field.validators.append(MaxValueValidator(most))
            field.widget.attrs["max"] = most
