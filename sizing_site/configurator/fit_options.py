"""Make it fit, as links: each of estimator.recommend's steps (catalog.sizing.make_it_fit)
turned into the configurator state that applies it (the page's own query parameters), and
kept only when that state, sized the page's way (state.configuration_size: the form, then
the estimate), runs: verdict "comfortable" or "tight". A link therefore never leads to a
page that says "Does not fit".

A step with no parameter on the page is left out: a larger memory share (vLLM, SGLang) is
what the verdict's start flags already say for a tight setup. vLLM and SGLang keep a share
of the weights in host memory (the form's "offload" percentage), not a number of layers:
the estimator's N of L layers becomes ceil(100 x N / L) %, sized again like every option.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from catalog import hardware
from catalog.sizing.cache import remembered
from estimator.recommend import PlanStep
from sizing_site.configurator.fields import OFFLOAD_FIELDS
from sizing_site.configurator.selectors import CACHE_SHAPE
from sizing_site.configurator.state import ConfiguratorState, StateError, configuration_size

# Every offload setting off (None: the parameter is left out; an unticked box is absent).
NO_OFFLOAD: dict[str, str | None] = {
    "offload": "0",
    "layers": None,
    "moe": None,
    "moe_layers": None,
}


@dataclass(frozen=True)
class FitOption:
    """One way to make the setup fit, as the state that applies it. `value` is the step's
    new figure (sequences, context tokens, GPUs, layers or percent in host memory) or
    name (KV type, quant); `total` the model's layers for "offload_layers"; the verdict
    and figures are the changed state's, sized by the page."""

    action: str  # PlanStep.action; "offload_percent" for a share of the weights
    value: int | str
    flags: tuple[str, ...]
    query: dict[str, str]  # the configurator's parameters of the changed state
    verdict: str  # "comfortable" | "tight"
    per_device_bytes: int
    decode_tokens_per_s: float
    total: int

    @property
    def fits(self) -> bool:
        """Always True for an option offered (the plan section's contract with PlanStep)."""
        return self.verdict != "does_not_fit"


def fit_options(*, state: ConfiguratorState, plan: Sequence[PlanStep]) -> list[FitOption]:
    """The plan's steps that the page can apply and whose state runs, in the plan's order
    (fastest decode first); kept in the shared sizing cache per model, card and setup."""
    if not plan:
        return []
    return remembered(
        "configurator-fit-options",
        (state.model.pk, state.accelerator.pk, state.setup, CACHE_SHAPE),
        lambda: _options(state, plan),
    )


def _options(state: ConfiguratorState, plan: Sequence[PlanStep]) -> list[FitOption]:
    base = state.sized_query
    out: list[FitOption] = []
    for step in plan:
        applied = _applied(step, state)
        if applied is None:
            continue
        action, value, changes = applied
        merged = {**base, **changes}
        query = {name: v for name, v in merged.items() if v is not None}
        if query == base:
            continue
        try:
            changed = configuration_size(
                model=state.model, accelerator=state.accelerator, data=query
            )
        except StateError:  # a value the form or the estimator refuses here: no link
            continue
        if not changed.fits:
            continue
        result = changed.sized.result
        total = state.sized.model_layers if action == "offload_layers" else 0
        out.append(
            FitOption(
                action,
                value,
                step.flags,
                query,
                result.fit.verdict,
                result.per_device_bytes,
                result.decode_tokens_per_s.estimate,
                total,
            )
        )
    return out


def _applied(
    step: PlanStep, state: ConfiguratorState
) -> tuple[str, int | str, dict[str, str | None]] | None:
    """The step as the page's parameters: (action, value, changed parameters); None when
    the page has no parameter for it."""
    change = step.change
    offload = OFFLOAD_FIELDS.get(state.setup.engine, ())
    if step.action == "fewer_sequences":
        count = int(change["workload.concurrent_sequences"])
        return step.action, count, {"seqs": str(count)}
    if step.action == "shorter_context":
        tokens = int(change["workload.context_tokens"])
        return step.action, tokens, {"ctx": str(tokens)}
    if step.action == "quantize_kv":
        kv = str(change["workload.kv_cache_dtype"])
        return step.action, kv, {"kv": kv}
    if step.action == "smaller_quant":
        quant = str(change["weights"])
        return step.action, quant, {"quant": quant}
    if step.action == "offload_moe_experts" and "moe" in offload:
        return step.action, "", {**NO_OFFLOAD, "moe": "on"}
    if step.action == "offload_layers":
        layers = int(change["workload.offload.layers"])
        if "layers" in offload:
            return step.action, layers, {**NO_OFFLOAD, "layers": str(layers)}
        if "offload" in offload and state.sized.model_layers:
            percent = min(100, math.ceil(100 * layers / state.sized.model_layers))
            return "offload_percent", percent, {**NO_OFFLOAD, "offload": str(percent)}
        return None
    if step.action == "more_devices":
        devices, chips = int(change["device.count"]), hardware.chips(state.accelerator)
        if devices % chips:
            return None
        return step.action, devices // chips, {"gpus": str(devices // chips)}
    return None
