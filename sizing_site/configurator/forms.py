"""The configurator's inputs: one GET form whose field names are the page's query
parameters (quant, ctx, gpus, seqs, kv, engine, prompt, output, and the CPU offload:
offload, layers, moe, moe_layers, host_bw)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.forms import BoundField
from django.utils.formats import number_format
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from catalog.hardware import EngineChoice
from catalog.models import Accelerator, LLMModel
from catalog.sizing import GGUF_QUANTS, Setup, fallback_quant, is_gguf
from catalog.sizing.specs import LayerCounts, RopeContext, layer_counts, rope_context
from estimator.engines import ENGINE_TABLE, KV_DTYPES, engine_capability, engine_label
from estimator.weights import HF_FORMATS
from sizing_site.configurator.commands import refusal
from sizing_site.configurator.fields import (
    ALL_OFFLOAD_FIELDS,
    OFFLOAD_FIELDS,
    quant_note,
    weights_choices,
)

ENGINE_CHOICES = [(engine.name, engine.label) for engine in ENGINE_TABLE]
KV_CHOICES = [(d, d) for d in KV_DTYPES]
# Every weights format the form knows (fields.py orders and filters them per engine).
ALL_FORMATS = frozenset((*GGUF_QUANTS, *HF_FORMATS))
DEFAULT_CONTEXT_TOKENS = 8192
DEFAULTS = {
    "gpus": 1,
    "seqs": 1,
    "kv": "f16",
    "offload": 0,
    "prompt": 512,
    "output": 256,
}
# The estimator's request fields, by the form field that sets them (the first prefix that
# matches wins: the offload's own fields before the whole offload).
ESTIMATOR_FIELDS = {
    "weights": "quant",
    "workload.context_tokens": "ctx",
    "device.count": "gpus",
    "workload.concurrent_sequences": "seqs",
    "workload.kv_cache_dtype": "kv",
    "engine": "engine",
    "workload.offload.layers": "layers",
    "workload.offload.moe_experts": "moe",
    "workload.offload.moe_layers": "moe_layers",
    "workload.offload": "offload",
    "workload.prompt_tokens": "prompt",
    "workload.output_tokens": "output",
    "workload.tensor_parallel": "gpus",
    "device.host_bandwidth_gbps": "host_bw",
}
# The form's CPU offload section (form.html folds it away while nothing is offloaded).
OFFLOAD_SECTION = ("offload", "layers", "moe", "moe_layers", "host_bw")


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


def kv_types(engine: str | None) -> tuple[str, ...]:
    """The KV cache types the select offers: the engine's (estimator.engines), every type
    when the engine is unknown (the form says so on the engine)."""
    if engine is None:
        return KV_DTYPES
    offered = engine_capability(engine).kv_cache_types
    return tuple(kv for kv in KV_DTYPES if kv in offered)


class SizedQuantBoundField(BoundField):
    """The quant select keeps what the visitor sent: "best that fits" stays selected (its
    option names the quant the page sized, ConfigureForm.sized_quant) until the visitor
    picks a format, so a later change (a longer context) sizes the best that fits again
    instead of pinning the quant the first answer chose. `as_sent` is the same select, for
    the one an HTMX response swaps into the page."""

    @property
    def as_sent(self) -> SafeString:
        return BoundField(self.form, self.field, self.name).as_widget()


class QuantField(forms.ChoiceField):
    def get_bound_field(self, form: forms.BaseForm, field_name: str) -> BoundField:
        return SizedQuantBoundField(form, self, field_name)


def _layers_text(count: int) -> str:
    return ngettext("This model has %(n)s layer.", "This model has %(n)s layers.", count) % {
        "n": count
    }


class ConfigureForm(forms.Form):
    offload_section = OFFLOAD_SECTION  # for form.html
    engine = forms.ChoiceField(label=_("Engine"), choices=ENGINE_CHOICES)
    quant = QuantField(label=_("Weights format"), required=False)
    ctx = forms.IntegerField(label=_("Context (tokens)"), min_value=1)
    gpus = forms.IntegerField(label=_("GPUs"), min_value=1, max_value=64)
    seqs = forms.IntegerField(label=_("Concurrent sequences"), min_value=1, max_value=4096)
    kv = forms.ChoiceField(label=_("KV cache precision"), choices=KV_CHOICES)
    prompt = forms.IntegerField(label=_("Prompt (tokens)"), min_value=1)
    output = forms.IntegerField(label=_("Output (tokens)"), min_value=1)
    offload = forms.IntegerField(
        label=_("CPU offload (%)"),
        min_value=0,
        max_value=100,
    )
    layers = forms.IntegerField(
        label=_("Layers in host memory"),
        required=False,
        min_value=0,
        help_text=_("llama.cpp -ngl: the first N layers stay on the CPU."),
    )
    moe = forms.BooleanField(label=_("MoE experts in host memory (--cpu-moe)"), required=False)
    moe_layers = forms.IntegerField(
        label=_("MoE experts of the first N layers (--n-cpu-moe N)"),
        required=False,
        min_value=0,
        help_text=_("Counted from the first layer; dense layers have no experts."),
    )
    host_bw = forms.FloatField(
        label=_("Host memory bandwidth (GB/s)"),
        required=False,
        min_value=1,
        max_value=2000,
        help_text=_("For offloaded weights; blank: dual-channel DDR5-5600, 89.6 GB/s."),
    )

    def __init__(
        self,
        data: Mapping[str, Any],
        *,
        max_context_tokens: int,
        engines: Sequence[EngineChoice] = (),
        card_name: str = "",
        rope: RopeContext | None = None,
        layers: LayerCounts | None = None,
        unified_memory: bool = False,
        architecture: str | None = None,
    ) -> None:
        """`engines`: what runs on the card (catalog.hardware), its default first; `rope`:
        where RoPE scaling takes over (catalog.sizing.specs.rope_context), for the context
        note and error; `layers`: the model's layers and experts, for the offload settings
        (None: not checked here, the estimator checks); `unified_memory`: the card has no
        separate host memory to offload to; `architecture`: the card's, so that only the
        checkpoints it runs are offered (None: not checked here)."""
        # Absent parameters take the defaults; a present but empty one is an error to show.
        defaults = {**DEFAULTS, "ctx": min(DEFAULT_CONTEXT_TOKENS, max_context_tokens)}
        if engines:
            defaults["engine"] = engines[0].engine
        merged = {**{k: str(v) for k, v in defaults.items()}, **{k: data[k] for k in data}}
        self.engines = {choice.engine: choice for choice in engines}
        self.card_name = card_name
        self.model_layers = layers
        self.unified_memory = unified_memory
        # The engine's weights formats; a format it does not load is dropped for the best
        # that fits, with a note, so that switching engines never ends on an error.
        choice = self.engines.get(str(merged.get("engine", "")))
        self.weights = weights_choices(
            choice.engine if choice else None,
            choice.backend if choice else None,
            moe=layers.moe if layers else True,
            architecture=architecture,
        )
        self.quant_note = ""
        sent = str(merged.get("quant") or "")
        formats = self.weights.formats
        if choice and formats and sent and sent not in formats and sent in ALL_FORMATS:
            self.quant_note = quant_note(
                choice.engine, sent, card=card_name, backend=choice.backend
            )
            merged["quant"] = ""
        self.kv_note = ""
        self.kv_types = kv_types(choice.engine if choice else None)
        sent_kv = str(merged.get("kv") or "")
        if choice and sent_kv in KV_DTYPES and sent_kv not in self.kv_types:
            # Switching engines keeps the page answering: a cache type the new engine lacks
            # falls back to its default, with a note, as a weights format does.
            merged["kv"] = DEFAULTS["kv"] if DEFAULTS["kv"] in self.kv_types else self.kv_types[0]
            self.kv_note = _("%(engine)s has no %(kv)s KV cache: showing %(default)s instead.") % {
                "engine": engine_label(choice.engine),
                "kv": sent_kv,
                "default": merged["kv"],
            }
        super().__init__(merged)
        self.fields["kv"].widget.choices = [(kv, kv) for kv in self.kv_types]
        self.max_context_tokens = max_context_tokens
        self.rope = rope
        self._sized_quant = ""
        self._set_quant_choices()
        if self.engines:  # the drop-down offers what runs on the card; clean_engine explains
            self.fields["engine"].widget.choices = [
                (engine, engine_label(engine)) for engine in self.engines
            ]
        for name, field in self.fields.items():
            field.widget.attrs["aria-describedby"] = f"err-{name}"
        if layers is not None:  # a hint for the spinner; _clean_offload checks
            for name in ("layers", "moe_layers"):
                self.fields[name].widget.attrs["max"] = str(layers.layers)

    @classmethod
    def for_pair(
        cls,
        data: Mapping[str, Any],
        *,
        model: LLMModel,
        accelerator: Accelerator,
        max_context_tokens: int,
        engines: Sequence[EngineChoice],
    ) -> ConfigureForm:
        """The form for a model on a card, with what the page knows of both."""
        return cls(
            data,
            max_context_tokens=max_context_tokens,
            engines=engines,
            card_name=str(accelerator),
            rope=rope_context(model),
            layers=layer_counts(model),
            unified_memory=accelerator.memory_kind == "unified",
            architecture=accelerator.architecture,
        )

    @property
    def sized_quant(self) -> str:
        """The quant the page sized for "best that fits", shown in the select; the view
        sets it once the setup is sized (the submitted data stays as sent)."""
        return self._sized_quant

    @sized_quant.setter
    def sized_quant(self, quant: str) -> None:
        self._sized_quant = quant
        self._set_quant_choices()

    def _set_quant_choices(self) -> None:
        best = str(_("Best that fits"))
        if self._sized_quant:
            best = _("Best that fits (%(quant)s)") % {"quant": self._sized_quant}
        field = self.fields["quant"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", best), *self.weights.groups]

    # --- which settings apply ---------------------------------------------------------

    @property
    def selected_engine(self) -> str:
        """The engine the form is for (what was sent, else the card's default)."""
        return str(self.data.get("engine", ""))

    @property
    def offload_fields(self) -> tuple[str, ...]:
        """The offload settings the form shows: those the engine has (none on unified
        memory), plus any set, so that an error on one shows where it can be cleared."""
        supported: tuple[str, ...] = ()
        if not self.unified_memory:
            supported = OFFLOAD_FIELDS.get(self.selected_engine, ALL_OFFLOAD_FIELDS)
        if self.model_layers is not None and not self.model_layers.moe:
            supported = tuple(f for f in supported if f not in ("moe", "moe_layers"))
        shown = [f for f in ALL_OFFLOAD_FIELDS if f in supported or self._is_set(f)]
        if shown:
            shown.append("host_bw")
        return tuple(shown)

    @property
    def offload_unavailable(self) -> str:
        """Why the form shows no offload settings."""
        if self.unified_memory:
            return _(
                "%(card)s has unified memory: there is no separate host memory to offload to."
            ) % {"card": self.card_name}
        return _("%(engine)s has no CPU offload setting; llama.cpp has the most.") % {
            "engine": engine_label(self.selected_engine)
        }

    @property
    def offload_summary(self) -> str:
        """The offload set, for the folded section's title ("" when none or invalid)."""
        if not self.is_valid():
            return ""
        data = self.cleaned_data
        if data.get("moe"):
            return str(_("all MoE experts"))
        if data.get("moe_layers"):
            count = data["moe_layers"]
            return ngettext("MoE experts of %(n)s layer", "MoE experts of %(n)s layers", count) % {
                "n": count
            }
        if data.get("layers"):
            count = data["layers"]
            return ngettext("%(n)s layer", "%(n)s layers", count) % {"n": count}
        if data.get("offload"):
            return _("%(n)s %% of the layers") % {"n": data["offload"]}
        return ""

    @property
    def offload_open(self) -> bool:
        """Whether the offload section starts unfolded: something is set or wrong in it."""
        return any(self._is_set(f) or f in self.errors for f in OFFLOAD_SECTION)

    def _is_set(self, name: str) -> bool:
        value = str(self.data.get(name, "") or "").strip()
        if name == "moe":
            return value.lower() not in ("", "false", "0", "off")
        return value not in ("", "0")

    # --- validation -------------------------------------------------------------------

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

    def _clean_layer_count(self, name: str) -> int | None:
        count: int | None = self.cleaned_data.get(name)
        if count is None or count == 0:
            return None
        return count

    def clean_layers(self) -> int | None:
        return self._clean_layer_count("layers")

    def clean_moe_layers(self) -> int | None:
        return self._clean_layer_count("moe_layers")

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
            runs = ", ".join(engine_label(e) for e in self.engines)
            raise forms.ValidationError(
                _("%(engine)s does not run on %(card)s. Engines that do: %(runs)s."),
                params={
                    "engine": engine_label(engine),
                    "card": self.card_name,
                    "runs": runs or _("none in the catalog"),
                },
                code="engine_hardware",
            )
        return engine

    def clean(self) -> dict[str, Any]:
        """An engine that cannot load the chosen weights format, or has no such KV type,
        is a 400 on the field at fault with the engine's reason (commands.refusal). With
        "best that fits" the quant comes from the engine's own family, so only KV counts.
        Offload settings the engine or card lacks, or that contradict each other, are
        errors on the field at fault."""
        data = super().clean() or {}
        engine, kv = data.get("engine"), data.get("kv")
        if not engine or engine not in self.engines:
            return data
        self._clean_offload(data, engine)
        if not kv:
            return data
        quant = data.get("quant") or fallback_quant(engine)
        common = {
            "engine": engine,
            "weights_format": "gguf" if is_gguf(quant) else "hf",
            "quant": quant,
            "backend": self.engines[engine].backend,
        }
        # f16 is a cache type every engine has: a refusal with it is about the weights,
        # or, when the engine loads no format at all here, about its backend.
        weights_reason = refusal(**common, kv="f16")
        if weights_reason and not self.weights.formats:
            self.add_error("engine", weights_reason)
        elif weights_reason and data.get("quant"):
            self.add_error("quant", weights_reason)
        elif kv_reason := refusal(**common, kv=kv):
            self.add_error("kv", kv_reason)
        return data

    def _clean_offload(self, data: dict[str, Any], engine: str) -> None:
        """The offload settings against the card, the engine, the model and each other."""
        chosen = {
            "offload": bool(data.get("offload")),
            "layers": data.get("layers") is not None,
            "moe": bool(data.get("moe")),
            "moe_layers": data.get("moe_layers") is not None,
        }
        name = engine_label(engine)
        layers = self.model_layers
        for field in (f for f, on in chosen.items() if on and f not in self.errors):
            if self.unified_memory:
                self.add_error(
                    field,
                    _(
                        "%(card)s has unified memory: there is no separate host memory "
                        "to offload to."
                    )
                    % {"card": self.card_name},
                )
            elif field not in OFFLOAD_FIELDS.get(engine, ()):
                self.add_error(field, _offload_refusal(field, name))
            elif field in ("moe", "moe_layers") and layers is not None and not layers.moe:
                self.add_error(field, _("This model has no MoE experts to offload."))
            elif field in ("layers", "moe_layers") and layers and data[field] > layers.layers:
                self.add_error(field, _layers_text(layers.layers))
        if self.errors:
            return
        if chosen["offload"] and chosen["layers"]:
            self.add_error("layers", _("Give a share of the layers or a number, not both."))
        elif chosen["moe"] and chosen["moe_layers"]:
            self.add_error(
                "moe_layers",
                _("Keep all experts or those of the first layers in host memory, not both."),
            )
        elif (chosen["moe"] or chosen["moe_layers"]) and (chosen["offload"] or chosen["layers"]):
            field = "moe" if chosen["moe"] else "moe_layers"
            self.add_error(
                field,
                _(
                    "Offload the MoE experts or whole layers, not both: the page sizes "
                    "one or the other."
                ),
            )

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
            offload_layers=data.get("layers"),
            offload_moe_layers=data.get("moe_layers"),
        )


def _offload_refusal(field: str, engine: str) -> str:
    """Why an engine has no such offload setting."""
    if field == "offload":
        return _("%(engine)s has no setting that keeps part of the weights in host memory.") % {
            "engine": engine
        }
    if field == "layers":
        return _(
            "%(engine)s cannot keep a number of layers in host memory; use the share "
            "(CPU offload %%) or llama.cpp."
        ) % {"engine": engine}
    if field == "moe":
        return _("%(engine)s has no setting that keeps the MoE experts in host memory.") % {
            "engine": engine
        }
    return _(
        "Only llama.cpp keeps the experts of the first layers in host memory "
        "(--n-cpu-moe); %(engine)s cannot."
    ) % {"engine": engine}
