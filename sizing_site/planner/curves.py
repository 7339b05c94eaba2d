"""Replica curves for the capacity planner: the configurator's estimator requests
(catalog.sizing.Setup, sizing_request, workflows.default_quant) for a card, engine, quant
and TP, turned into estimator.capacity.replica_curve's curve. Each curve is kept in the
shared sizing cache (per catalog version, model, card, engine, quant, TP and workload), so
a second plan of the same model and workload reads them instead of calling the estimator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from catalog import hardware
from catalog.models import Accelerator, LLMModel
from catalog.sizing import Setup, measured_weights, sizing_request
from catalog.sizing.cache import remembered, remembered_many
from catalog.sizing.workflows import default_quant
from estimator import capacity
from estimator.api import RequestError


@dataclass(frozen=True)
class CurveInputs:
    """What shapes a replica curve besides the model, card, engine, quant and TP."""

    context_tokens: int
    prompt_tokens: int
    output_tokens: int
    long_prompt_tokens: int | None = None  # the long case's prompt (its TTFT and prefill)
    conservative: bool = False  # the estimator's low speeds and high TTFTs
    cached_prompt_share: float = 0.0  # of every prompt, from the engine's prefix cache


# A cached curve: (quant, points, max_sequences, prefill tok/s, no-load TTFT, the two at
# the long prompt or None, whether the points carry the prefill), or the estimator's
# refusal (field, message). The cache key's prefix names this layout ("-v2").
_Cached = tuple[Any, ...]
CURVE_CACHE = "planner-curve-v2"


def _curve_parts(
    *,
    model: LLMModel,
    card: Accelerator,
    choice: hardware.EngineChoice,
    quant: str,
    tp: int,
    inputs: CurveInputs,
) -> tuple[object, ...]:
    """What a replica curve is computed from besides catalog data: its cache key's parts
    (the catalog version is in the key)."""
    return (
        model.pk,
        card.pk,
        choice.engine,
        choice.backend,
        quant,
        tp,
        inputs.context_tokens,
        inputs.prompt_tokens,
        inputs.output_tokens,
        inputs.long_prompt_tokens,
        inputs.conservative,
        inputs.cached_prompt_share,
    )


def _from_cached(cached: _Cached) -> tuple[str, capacity.ReplicaCurve] | RequestError:
    if cached[0] is None:
        return RequestError(cached[1], cached[2])
    resolved, points, max_sequences, prefill, ttft, long_prefill, long_ttft, in_steps = cached
    curve = capacity.ReplicaCurve(
        points=points,
        max_sequences=max_sequences,
        prefill_tokens_per_s=prefill,
        ttft_s=ttft,
        long_prefill_tokens_per_s=long_prefill,
        long_ttft_s=long_ttft,
        prefill_in_steps=in_steps,
    )
    return resolved, curve


def replica_curve_for(
    *,
    model: LLMModel,
    card: Accelerator,
    choice: hardware.EngineChoice,
    quant: str,
    tp: int,
    inputs: CurveInputs,
) -> tuple[str, capacity.ReplicaCurve] | RequestError:
    """The resolved quant and the replica curve of `tp` boards of `card` under `choice`
    (quant "": the least-compressed that fits, as the configurator picks it), from the
    shared sizing cache (kept per catalog version, model, card, engine, quant, TP and
    workload); or the estimator's refusal."""
    parts = _curve_parts(model=model, card=card, choice=choice, quant=quant, tp=tp, inputs=inputs)
    cached: _Cached = remembered(
        CURVE_CACHE,
        parts,
        lambda: _curve(model=model, card=card, choice=choice, quant=quant, tp=tp, inputs=inputs),
    )
    return _from_cached(cached)


def replica_curves_for(
    *,
    model: LLMModel,
    wanted: Sequence[tuple[Accelerator, hardware.EngineChoice, str, int]],
    inputs: CurveInputs,
) -> list[tuple[str, capacity.ReplicaCurve] | RequestError]:
    """replica_curve_for for each (card, engine choice, quant, TP) of `wanted`, in order,
    with one cache read for all of them (remembered_many)."""
    parts_list = [
        _curve_parts(model=model, card=card, choice=choice, quant=quant, tp=tp, inputs=inputs)
        for card, choice, quant, tp in wanted
    ]
    by_parts = dict(zip(parts_list, wanted, strict=True))

    def compute(parts: tuple[object, ...]) -> _Cached:
        card, choice, quant, tp = by_parts[parts]
        return _curve(model=model, card=card, choice=choice, quant=quant, tp=tp, inputs=inputs)

    return [_from_cached(c) for c in remembered_many(CURVE_CACHE, parts_list, compute)]


def _curve(
    *,
    model: LLMModel,
    card: Accelerator,
    choice: hardware.EngineChoice,
    quant: str,
    tp: int,
    inputs: CurveInputs,
) -> _Cached:
    """The uncached curve (estimator.capacity.replica_curve of the configurator's typed
    request), as plain values that pickle."""
    setup = Setup(
        quant=quant,
        context_tokens=inputs.context_tokens,
        gpus=tp,
        engine=choice.engine,
        backend=choice.backend,
        prompt_tokens=inputs.prompt_tokens,
        output_tokens=inputs.output_tokens,
    )
    try:
        if not quant:
            setup = replace(setup, quant=default_quant(model=model, accelerator=card, setup=setup))
        request = sizing_request(
            model=model, accelerator=card, setup=setup, measured=measured_weights(model)
        )
        curve = capacity.replica_curve(
            request,
            long_prompt_tokens=inputs.long_prompt_tokens,
            conservative=inputs.conservative,
            cached_prompt_share=inputs.cached_prompt_share,
        )
    except RequestError as exc:
        return (None, exc.field, exc.message)
    except ValueError as exc:  # a quant the estimator cannot size for this model
        return (None, "quant", str(exc))
    return (
        setup.quant,
        curve.points,
        curve.max_sequences,
        curve.prefill_tokens_per_s,
        curve.ttft_s,
        curve.long_prefill_tokens_per_s,
        curve.long_ttft_s,
        curve.prefill_in_steps,
    )
