"""The configurator's inputs: one GET form whose field names are the page's query
parameters (quant, ctx, gpus, seqs, kv, engine, offload, prompt, output)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django import forms
from django.forms import BoundField
from django.utils.formats import number_format
from django.utils.translation import gettext_lazy as _

from catalog.hardware import EngineChoice
from catalog.models import Accelerator, LLMModel
from catalog.sizing import GGUF_QUANTS, Setup, fallback_quant, is_gguf
from catalog.sizing.specs import RopeContext, rope_context
from estimator import cost
from estimator.api.schema import KV_DTYPES
from estimator.weights import HF_FORMATS
from sizing_site.configurator import selectors
from sizing_site.configurator.commands import ENGINE_NAMES, refusal

ENGINE_CHOICES = list(ENGINE_NAMES.items())
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
    "device.host_bandwidth_gbps": "host_bw",
}


# How the page names a config.json RoPE scaling type (RopeContext.scaling_type).
ROPE_TYPE_NAMES = {
    "yarn": "YaRN",
    "longrope": "LongRoPE",
    "llama3": "Llama 3",
    "dynamic": _("dynamic NTK"),
    "linear": _("linear"),
}


def _tokens(value: int) -> str:
    """A token count with the locale's digit grouping (131,072)."""
    return number_format(value, force_grouping=True)


def rope_scaling_name(scaling_type: str) -> str:
    """The page's name of a RoPE scaling type; "" for one only the model card states."""
    return str(ROPE_TYPE_NAMES.get(scaling_type, scaling_type))


def field_for(estimator_field: str) -> str | None:
    """The form field behind an estimator RequestError's dotted path (None: the whole form)."""
    for prefix, name in ESTIMATOR_FIELDS.items():
        if estimator_field == prefix or estimator_field.startswith(prefix + "."):
            return name
    return None


class SizedQuantBoundField(BoundField):
    """The quant select shows the quant the page sized when the visitor asked for the best
    that fits (ConfigureForm.sized_quant); what the visitor sent stays as sent."""

    def value(self) -> Any:
        return super().value() or getattr(self.form, "sized_quant", "")


class QuantField(forms.ChoiceField):
    def get_bound_field(self, form: forms.BaseForm, field_name: str) -> BoundField:
        return SizedQuantBoundField(form, self, field_name)


class ConfigureForm(forms.Form):
    quant = QuantField(label=_("Weights format"), choices=QUANT_CHOICES, required=False)
    ctx = forms.IntegerField(label=_("Context (tokens)"), min_value=1)
    gpus = forms.IntegerField(label=_("GPUs"), min_value=1, max_value=64)
    seqs = forms.IntegerField(label=_("Concurrent sequences"), min_value=1, max_value=4096)
    kv = forms.ChoiceField(label=_("KV cache precision"), choices=KV_CHOICES)
    engine = forms.ChoiceField(label=_("Engine"), choices=ENGINE_CHOICES)
    offload = forms.IntegerField(label=_("CPU offload (%)"), min_value=0, max_value=100)
    moe = forms.BooleanField(label=_("MoE experts in host memory (--cpu-moe)"), required=False)
    host_bw = forms.FloatField(
        label=_("Host memory bandwidth (GB/s)"),
        required=False,
        min_value=1,
        max_value=2000,
        help_text=_("For offloaded weights; blank: dual-channel DDR5-5600, 89.6 GB/s."),
    )
    prompt = forms.IntegerField(label=_("Prompt (tokens)"), min_value=1)
    output = forms.IntegerField(label=_("Output (tokens)"), min_value=1)

    def __init__(
        self,
        data: Mapping[str, Any],
        *,
        max_context_tokens: int,
        engines: Sequence[EngineChoice] = (),
        card_name: str = "",
        rope: RopeContext | None = None,
    ) -> None:
        """`engines`: what runs on the card (catalog.hardware), its default first; `rope`:
        where RoPE scaling takes over (catalog.sizing.specs.rope_context), for the context
        note and error."""
        # Absent parameters take the defaults; a present but empty one is an error to show.
        defaults = {**DEFAULTS, "ctx": min(DEFAULT_CONTEXT_TOKENS, max_context_tokens)}
        if engines:
            defaults["engine"] = engines[0].engine
        merged = {**{k: str(v) for k, v in defaults.items()}, **{k: data[k] for k in data}}
        super().__init__(merged)
        self.max_context_tokens = max_context_tokens
        self.rope = rope
        # The quant the page sized for "best that fits", shown in the select; the view sets
        # it once the setup is sized (the submitted data stays as sent).
        self.sized_quant = ""
        self.engines = {choice.engine: choice for choice in engines}
        self.card_name = card_name
        for name, field in self.fields.items():
            field.widget.attrs["aria-describedby"] = f"err-{name}"

    def clean_ctx(self) -> int:
        ctx: int = self.cleaned_data["ctx"]
        if ctx <= self.max_context_tokens:
            return ctx
        if self.rope is not None:
            raise forms.ValidationError(
                _(
                    "This model takes at most %(max)s tokens of context, with RoPE "
                    "scaling beyond %(native)s tokens."
                ),
                params={
                    "max": _tokens(self.max_context_tokens),
                    "native": _tokens(self.rope.native_tokens),
                },
                code="max_context",
            )
        raise forms.ValidationError(
            _("This model takes at most %(max)s tokens of context."),
            params={"max": self.max_context_tokens},
            code="max_context",
        )

    @property
    def rope_note(self) -> str:
        """A note for a context beyond the native length: RoPE scaling (YaRN, ...) is
        active from there on, and engines apply it at every length once enabled. "" when
        the context does not need it or the form is not valid."""
        rope = self.rope
        ctx = self.cleaned_data.get("ctx") if self.is_bound and self.is_valid() else None
        if rope is None or ctx is None or ctx <= rope.native_tokens:
            return ""
        params = {
            "native": _tokens(rope.native_tokens),
            "type": rope_scaling_name(rope.scaling_type),
        }
        if rope.scaling_type:
            text = _(
                "RoPE scaling (%(type)s) is active from %(native)s tokens: enable it in "
                "the engine for this context. vLLM and llama.cpp apply it at every length, "
                "short prompts included."
            )
        else:
            text = _(
                "RoPE scaling is active from %(native)s tokens, as the model card states: "
                "enable it in the engine for this context. vLLM and llama.cpp apply it at "
                "every length, short prompts included."
            )
        return str(text) % params

    def clean_engine(self) -> str:
        engine: str = self.cleaned_data["engine"]
        if engine not in self.engines:
            runs = ", ".join(ENGINE_NAMES.get(e, e) for e in self.engines)
            raise forms.ValidationError(
                _("%(engine)s does not run on %(card)s. Engines that do: %(runs)s."),
                params={
                    "engine": ENGINE_NAMES.get(engine, engine),
                    "card": self.card_name,
                    "runs": runs or _("none in the catalog"),
                },
                code="engine_hardware",
            )
        return engine

    def clean(self) -> dict[str, Any]:
        """An engine that cannot load the chosen weights format, or has no such KV type,
        is a 400 on the field at fault with the engine's reason (commands.refusal). With
        "best that fits" the quant comes from the engine's own family, so only KV counts."""
        data = super().clean() or {}
        engine, kv = data.get("engine"), data.get("kv")
        if not engine or not kv or engine not in self.engines:
            return data
        quant = data.get("quant") or fallback_quant(engine)
        common = {
            "engine": engine,
            "weights_format": "gguf" if is_gguf(quant) else "hf",
            "quant": quant,
            "backend": self.engines[engine].backend,
        }
        # f16 is a cache type every engine has: a refusal with it is about the weights.
        weights_reason = refusal(**common, kv="f16")
        if weights_reason and data.get("quant"):
            self.add_error("quant", weights_reason)
        elif kv_reason := refusal(**common, kv=kv):
            self.add_error("kv", kv_reason)
        return data

    def setup(self) -> Setup:
        """The validated inputs as a Setup; quant "" asks for the best that fits."""
        data = self.cleaned_data
        choice = self.engines.get(data["engine"])
        return Setup(
            quant=data["quant"],
            context_tokens=data["ctx"],
            gpus=data["gpus"],
            sequences=data["seqs"],
            kv=data["kv"],
            engine=data["engine"],
            offload_percent=data["offload"],
            prompt_tokens=data["prompt"],
            output_tokens=data["output"],
            backend=choice.backend if choice else "",
            offload_moe_experts=bool(data.get("moe")),
            host_bandwidth_gbps=data.get("host_bw"),
        )


# Rent vs buy: the host allowance and its basis are estimator.cost's (system_purchase_usd,
# system_power_w); a multi-GPU server costs more, so the fields can be overwritten.
HOST_ALLOWANCE_USD = cost.HOST_ALLOWANCE_USD
HOST_POWER_W = cost.HOST_POWER_W
# An assumption, the estimator's own default; for scale, the US residential average was
# about 0.16 USD/kWh in 2024 (EIA, Electric Power Monthly, table 5.3).
DEFAULT_USD_PER_KWH = 0.15
DEFAULT_HOURS_PER_DAY = 8  # a working day of use, an assumption
DEFAULT_PUE = 1.0  # a desk: no cooling plant on top of the machine's own draw


class RentBuyForm(forms.Form):
    """Owning the configuration's hardware against renting the cheapest fitting offer.
    Its own GET parameters beside the configurator's; defaults come from the catalog."""

    hours = forms.FloatField(label=_("Active hours per day"), min_value=1, max_value=24)
    hw_usd = forms.FloatField(label=_("Hardware price (USD)"), min_value=0, max_value=1e9)
    power_w = forms.FloatField(label=_("Power draw (W)"), min_value=0, max_value=1e6)
    kwh_usd = forms.FloatField(label=_("Electricity (USD per kWh)"), min_value=0, max_value=10)
    pue = forms.FloatField(label=_("PUE"), min_value=1, max_value=5)
    # for the page's note on where the defaults come from
    host_allowance_usd = HOST_ALLOWANCE_USD
    host_power_w = HOST_POWER_W
    default_usd_per_kwh = DEFAULT_USD_PER_KWH

    @classmethod
    def for_configuration(
        cls, data: Mapping[str, Any], *, price_usd: float | None, tdp_w: int | None, gpus: int
    ) -> RentBuyForm:
        """Bound to the query merged over the defaults; unbound (nothing to compare yet)
        while the catalog lacks a default and the visitor has not sent the form."""
        defaults: dict[str, Any] = {
            "hours": DEFAULT_HOURS_PER_DAY,
            "hw_usd": cost.system_purchase_usd(price_usd, gpus),
            "power_w": cost.system_power_w(tdp_w, gpus),
            "kwh_usd": DEFAULT_USD_PER_KWH,
            "pue": DEFAULT_PUE,
        }
        sent = any(name in data for name in cls.base_fields)
        if not sent and None in defaults.values():
            return cls(initial=defaults)
        known = {k: str(v) for k, v in defaults.items() if v is not None}
        return cls({**known, **{k: data[k] for k in cls.base_fields if k in data}})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            field.widget.attrs["aria-describedby"] = f"err-{name}"
            field.widget.attrs["step"] = "any"

    def ownership(self) -> cost.Ownership | None:
        """Owning the hardware as the visitor set it; None until the form is sent valid."""
        if not self.is_bound or not self.is_valid():
            return None
        data = self.cleaned_data
        return cost.Ownership(
            purchase_usd=data["hw_usd"],
            power_w=data["power_w"],
            electricity_usd_per_kwh=data["kwh_usd"],
            pue=data["pue"],
            hours_per_day=data["hours"],
        )


class StateError(ValueError):
    """A configurator state that cannot be sized: unknown rows, a model or card the page
    cannot size, invalid parameters, or a setup the estimator refuses."""


@dataclass(frozen=True)
class ConfiguratorState:
    """A configurator page's state, validated: the rows, the setup (quant "" = the best
    that fits) and the form's own query parameters (defaults filled in)."""

    model: LLMModel
    accelerator: Accelerator
    setup: Setup
    query: dict[str, str]


def configurator_state(
    *, model_slug: str, accelerator_slug: str, query: Mapping[str, str]
) -> ConfiguratorState:
    """The state a configurator address stands for, validated as the page validates it
    (saved reports replay it). Raises StateError."""
    try:
        model, accelerator = selectors.configuration_rows(
            model_slug=model_slug, accelerator_slug=accelerator_slug
        )
    except (LLMModel.DoesNotExist, Accelerator.DoesNotExist) as exc:
        raise StateError(_("unknown model or accelerator")) from exc
    scope = selectors.page_scope(model=model, accelerator=accelerator)
    if scope.max_context_tokens is None or not scope.sizeable_card:
        raise StateError(_("this configuration cannot be sized"))
    if not scope.engines:
        raise StateError(_("no engine in the catalog runs on this card"))
    form = ConfigureForm(
        query,
        max_context_tokens=scope.max_context_tokens,
        engines=scope.engines,
        card_name=str(accelerator),
        rope=rope_context(model),
    )
    if not form.is_valid():
        raise StateError(_("invalid configurator parameters"))
    own = {name: str(form.data[name]) for name in form.fields if name in form.data}
    return ConfiguratorState(model, accelerator, form.setup(), own)
