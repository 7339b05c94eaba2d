"""The configurator's inputs: one GET form whose field names are the page's query
parameters (quant, ctx, gpus, seqs, kv, engine, offload, prompt, output)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from catalog.adapters import GGUF_QUANTS, Setup
from estimator.api.schema import KV_DTYPES
from estimator.weights import HF_FORMATS

ENGINE_CHOICES = [
    ("llama.cpp", "llama.cpp"),
    ("ollama", "Ollama"),
    ("vllm", "vLLM"),
    ("sglang", "SGLang"),
]
QUANT_CHOICES = [
    ("", _("Best that fits")),
    (_("GGUF (llama.cpp, Ollama)"), [(q, q) for q in GGUF_QUANTS]),
    (_("Hugging Face checkpoint (vLLM, SGLang)"), [(d, d) for d in HF_FORMATS]),
]
KV_CHOICES = [(d, d) for d in KV_DTYPES]
DEFAULT_CONTEXT_TOKENS = 8192
DEFAULTS = {
    "gpus": 1,
    "seqs": 1,
    "kv": "f16",
    "engine": "llama.cpp",
    "offload": 0,
    "prompt": 512,
    "output": 256,
}
# The estimator's request fields, by the form field that sets them.
ESTIMATOR_FIELDS = {
    "weights": "quant",
    "workload.context_tokens": "ctx",
    "device.count": "gpus",
    "workload.concurrent_sequences": "seqs",
    "workload.kv_cache_dtype": "kv",
    "engine": "engine",
    "workload.offload": "offload",
    "workload.prompt_tokens": "prompt",
    "workload.output_tokens": "output",
    "workload.tensor_parallel": "gpus",
}


def field_for(estimator_field: str) -> str | None:
    """The form field behind an estimator RequestError's dotted path (None: the whole form)."""
    for prefix, name in ESTIMATOR_FIELDS.items():
        if estimator_field == prefix or estimator_field.startswith(prefix + "."):
            return name
    return None


class ConfigureForm(forms.Form):
    quant = forms.ChoiceField(label=_("Weights format"), choices=QUANT_CHOICES, required=False)
    ctx = forms.IntegerField(label=_("Context (tokens)"), min_value=1)
    gpus = forms.IntegerField(label=_("GPUs"), min_value=1, max_value=64)
    seqs = forms.IntegerField(label=_("Concurrent sequences"), min_value=1, max_value=4096)
    kv = forms.ChoiceField(label=_("KV cache precision"), choices=KV_CHOICES)
    engine = forms.ChoiceField(label=_("Engine"), choices=ENGINE_CHOICES)
    offload = forms.IntegerField(label=_("CPU offload (%)"), min_value=0, max_value=100)
    prompt = forms.IntegerField(label=_("Prompt (tokens)"), min_value=1)
    output = forms.IntegerField(label=_("Output (tokens)"), min_value=1)

    def __init__(self, data: Mapping[str, Any], *, max_context_tokens: int) -> None:
        # Absent parameters take the defaults; a present but empty one is an error to show.
        defaults = {**DEFAULTS, "ctx": min(DEFAULT_CONTEXT_TOKENS, max_context_tokens)}
        merged = {**{k: str(v) for k, v in defaults.items()}, **{k: data[k] for k in data}}
        super().__init__(merged)
        self.max_context_tokens = max_context_tokens
        for name, field in self.fields.items():
            field.widget.attrs["aria-describedby"] = f"err-{name}"

    def clean_ctx(self) -> int:
        ctx: int = self.cleaned_data["ctx"]
        if ctx > self.max_context_tokens:
            raise forms.ValidationError(
                _("This model takes at most %(max)s tokens of context."),
                params={"max": self.max_context_tokens},
                code="max_context",
            )
        return ctx

    def setup(self, *, quant: str) -> Setup:
        data = self.cleaned_data
        return Setup(
            quant=quant,
            context_tokens=data["ctx"],
            gpus=data["gpus"],
            sequences=data["seqs"],
            kv=data["kv"],
            engine=data["engine"],
            offload_percent=data["offload"],
            prompt_tokens=data["prompt"],
            output_tokens=data["output"],
        )
