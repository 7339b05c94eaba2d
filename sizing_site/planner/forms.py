"""The planner's one form: the page's GET query and the API's JSON body (as strings) both
go through it, so a value is refused with the same message under the same name."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from catalog.models import LLMModel
from catalog.scoping import Owner
from catalog.sizing import model_context_limit
from estimator import capacity
from sizing_site.planner import curves, selectors
from sizing_site.tenancy.access import Tenant

# The fields besides the model, with the value a query or body that leaves one out gets.
DEFAULTS: dict[str, str] = {
    "think_s": "30",
    "prompt_tokens": "1000",
    "output_tokens": "400",
    "context_tokens": "8192",
    "ttft_p95_s": "1.5",
    "tokens_per_s_per_user": "30",
    "n_plus_one": "false",
    "allow_consumer_cards": "false",
    "peak_factor": "1",
    "conservative": "false",
    "prompt_cache_percent": "0",
    "horizon_months": "36",
    "utilisation_percent": "100",
}
# The long case (docs/capacity.md): optional; a long prompt without a share takes this one.
LONG_FIELDS = ("long_prompt_tokens", "long_output_tokens", "long_share_percent")
DEFAULT_LONG_SHARE_PERCENT = 10.0
FIELDS = frozenset(
    {"model", "users", "requests_per_minute", "tpot_p95_ms", *DEFAULTS, *LONG_FIELDS},
)
MAX_CONTEXT_TOKENS = 10_000_000


class PlanForm(forms.Form):
    """A model, the load, the service level and the horizon of owning."""

    model = forms.CharField(label=_("Model"), max_length=200)
    users = forms.IntegerField(
        label=_("Concurrent users"), required=False, min_value=1, max_value=1_000_000
    )
    requests_per_minute = forms.FloatField(
        label=_("or requests per minute"), required=False, min_value=0.001, max_value=1e6
    )
    think_s = forms.FloatField(
        label=_("Think time between requests (s)"), min_value=0, max_value=86_400
    )
    prompt_tokens = forms.IntegerField(
        label=_("Prompt tokens"), min_value=1, max_value=MAX_CONTEXT_TOKENS
    )
    output_tokens = forms.IntegerField(
        label=_("Output tokens"), min_value=1, max_value=MAX_CONTEXT_TOKENS
    )
    context_tokens = forms.IntegerField(
        label=_("Context (tokens)"), min_value=1, max_value=MAX_CONTEXT_TOKENS
    )
    ttft_p95_s = forms.FloatField(
        label=_("Time to first token, p95 (s)"), min_value=0.001, max_value=3600
    )
    tokens_per_s_per_user = forms.FloatField(
        label=_("Tokens per second per user"), min_value=0.1, max_value=10_000
    )
    tpot_p95_ms = forms.FloatField(
        label=_("Time per output token, p95 (ms)"),
        required=False,
        min_value=0.1,
        max_value=10_000,
        help_text=_("Optional: held at every replica's busiest, with the tokens per second."),
    )
    prompt_cache_percent = forms.FloatField(
        label=_("Prompt served from the prefix cache (%)"),
        min_value=0,
        max_value=95,
        help_text=_(
            "A shared system prompt or a chat's earlier turns: that share of every prompt "
            "is not computed again (vLLM, SGLang and TensorRT-LLM)."
        ),
    )
    long_prompt_tokens = forms.IntegerField(
        label=_("Long case: prompt tokens"),
        required=False,
        min_value=1,
        max_value=MAX_CONTEXT_TOKENS,
        help_text=_("Optional: a share of the requests with a long prompt."),
    )
    long_output_tokens = forms.IntegerField(
        label=_("Long case: output tokens"),
        required=False,
        min_value=1,
        max_value=MAX_CONTEXT_TOKENS,
        help_text=_("Blank: the typical output."),
    )
    long_share_percent = forms.FloatField(
        label=_("Long case: share of requests (%)"),
        required=False,
        min_value=0,
        max_value=100,
        help_text=_("Blank: 10 % when a long prompt is given."),
    )
    n_plus_one = forms.BooleanField(label=_("Keep one spare replica"), required=False)
    peak_factor = forms.FloatField(
        label=_("Peak-hour factor"),
        min_value=1,
        max_value=10,
        help_text=_("The busiest hour's load over the typical one: 1.5 plans for 50 % more."),
    )
    conservative = forms.BooleanField(
        label=_("Plan at the low end of the speed range"),
        required=False,
        help_text=_("Each speed at its low bound and each time to first token at its high one."),
    )
    allow_consumer_cards = forms.BooleanField(
        label=_("Allow consumer cards"),
        required=False,
        help_text=_(
            "GeForce and Radeon RX cards are not for datacenter use (NVIDIA's driver licence, "
            "no ECC, no server chassis): left out unless allowed."
        ),
    )
    horizon_months = forms.IntegerField(
        label=_("Months to own the cards"), min_value=1, max_value=120
    )
    utilisation_percent = forms.IntegerField(
        label=_("Utilisation of owned cards (%)"), min_value=1, max_value=100
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The tenant's organisation: its own models are found too (from_data's argument).
        self.organizations: Sequence[Owner] = kwargs.pop("organizations", ())
        super().__init__(*args, **kwargs)
        self.planner_model: LLMModel | None = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any], organizations: Sequence[Owner] = ()) -> PlanForm:
        """A bound form (its values as the page's query carries them, or typed as the API's
        input gives them), the fields left out at their defaults; `organizations`' own
        models are found too."""
        bound = {**DEFAULTS, **{k: v for k, v in data.items() if k in FIELDS}}
        return cls(bound, organizations=organizations)

    def clean_model(self) -> str:
        slug = self.cleaned_data["model"]
        try:
            self.planner_model = selectors.planner_model(
                slug=slug, organizations=self.organizations
            )
        except LLMModel.DoesNotExist:
            raise forms.ValidationError(_("No model with this slug."), code="unknown") from None
        return str(slug)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        users, rate = data.get("users"), data.get("requests_per_minute")
        if "users" in data and "requests_per_minute" in data:
            if users is None and rate is None:
                self.add_error("users", _("Give the users or the requests per minute."))
            elif users is not None and rate is not None:
                self.add_error(
                    "requests_per_minute", _("Give the users or the requests per minute, not both.")
                )
        context = data.get("context_tokens")
        if context is not None and self.planner_model is not None:
            limit = model_context_limit(self.planner_model)
            if limit is None:
                self.add_error("model", _("The estimator cannot read this model's config."))
            elif context > limit:
                self.add_error(
                    "context_tokens",
                    _("At most %(limit)s tokens for this model.") % {"limit": limit},
                )
        prompt, output = data.get("prompt_tokens"), data.get("output_tokens")
        if (
            context is not None
            and prompt is not None
            and output is not None
            and prompt + output > context
            and "context_tokens" not in self.errors
        ):
            self.add_error(
                "context_tokens", _("The prompt and the output must fit in the context.")
            )
        self._clean_long(data)
        return data

    def _clean_long(self, data: dict[str, Any]) -> None:
        """The long case needs its prompt, and its prompt and output must fit the context."""
        long_prompt = data.get("long_prompt_tokens")
        if long_prompt is None:
            for name in ("long_output_tokens", "long_share_percent"):
                if data.get(name) is not None and name not in self.errors:
                    self.add_error(name, _("Give the long case's prompt tokens too."))
            return
        context, output = data.get("context_tokens"), data.get("output_tokens")
        long_output = data.get("long_output_tokens") or output
        if (
            context is not None
            and long_output is not None
            and long_prompt + long_output > context
            and "context_tokens" not in self.errors
        ):
            self.add_error(
                "long_prompt_tokens",
                _("The long prompt and its output must fit in the context (%(context)s tokens).")
                % {"context": context},
            )

    # --- the planner's inputs (valid form only) ---------------------------------------

    def inputs(self) -> curves.CurveInputs:
        data = self.cleaned_data
        return curves.CurveInputs(
            context_tokens=data["context_tokens"],
            prompt_tokens=data["prompt_tokens"],
            output_tokens=data["output_tokens"],
            long_prompt_tokens=data.get("long_prompt_tokens"),
            conservative=bool(data.get("conservative")),
            cached_prompt_share=(data.get("prompt_cache_percent") or 0.0) / 100,
        )

    def long_share(self) -> float:
        """The share of long requests, 0 to 1 (0 without a long prompt)."""
        data = self.cleaned_data
        if data.get("long_prompt_tokens") is None:
            return 0.0
        percent = data.get("long_share_percent")
        return (DEFAULT_LONG_SHARE_PERCENT if percent is None else percent) / 100

    def load(self) -> capacity.Load:
        """The load to plan for: the users or requests a minute at the peak hour (x the
        peak-hour factor, users rounded up)."""
        data = self.cleaned_data
        peak = data.get("peak_factor") or 1.0
        users, rate = data["users"], data["requests_per_minute"]
        return capacity.Load(
            users=math.ceil(users * peak - 1e-9) if users is not None else None,
            requests_per_minute=rate * peak if rate is not None else None,
            think_s=data["think_s"],
            prompt_tokens=data["prompt_tokens"],
            output_tokens=data["output_tokens"],
            long_prompt_tokens=data.get("long_prompt_tokens"),
            long_output_tokens=data.get("long_output_tokens"),
            long_share=self.long_share(),
        )

    def service(self) -> capacity.ServiceLevel:
        data = self.cleaned_data
        return capacity.ServiceLevel(
            ttft_p95_s=data["ttft_p95_s"],
            tokens_per_s_per_user=data["tokens_per_s_per_user"],
            spare_replicas=1 if data["n_plus_one"] else 0,
            tpot_p95_ms=data.get("tpot_p95_ms"),
        )

    def horizon(self) -> capacity.Horizon:
        data = self.cleaned_data
        return capacity.Horizon(
            months=data["horizon_months"], utilisation=data["utilisation_percent"] / 100
        )

    def plan(self, *, tenant: Tenant) -> selectors.Planned:
        """The plan of a valid form (selectors.planned). Raises RequestError; its field
        is a planner field, selectors.form_field names the form's."""
        assert self.planner_model is not None
        return selectors.planned(
            model=self.planner_model,
            tenant=tenant,
            inputs=self.inputs(),
            load=self.load(),
            service=self.service(),
            horizon=self.horizon(),
            allow_consumer=bool(self.cleaned_data.get("allow_consumer_cards")),
        )
