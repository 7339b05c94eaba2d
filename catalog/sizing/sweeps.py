"""One model across many cards: the explore tables, the recommendation boxes and the
configurator's "smallest card that fits".

The explore pages ask one question of many (model, card) pairs: the least-compressed quant
at or above a quality floor that fits one card, and its decode speed, with the
configurator's request at its defaults under the card's OWN default engine and backend
(the support matrix): llama.cpp with GGUF quants where it runs, vLLM with HF checkpoints on
a TPU. Cards are swept in groups sharing an engine and backend with estimator.api.sweep; a
multi-device board (MI250X) takes full estimates over its devices. The answer is kept in
the shared sizing cache (catalog.sizing.cache: every catalog edit starts afresh), so a
filter change or a second visitor costs one cache read. The configurator, compare and every
recommendation box read the same CardFit, so a card's figure is the same on every page.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from catalog import hardware
from catalog.models import Accelerator, LLMModel
from catalog.sizing import deadline
from catalog.sizing.cache import lookup_many, remembered, remembered_here, store_many
from catalog.sizing.requests import (
    MATRIX_GGUF_QUANTS,
    Setup,
    can_size_accelerator,
    device,
    family_ladder,
    measured_bytes,
    measured_weights,
    native_format,
    native_ladder,
    sizeable_quants,
    sizing_request,
)
from estimator.api import (
    Device,
    Offload,
    Request,
    RequestError,
    SweepRow,
    run_estimate,
    sweep,
)
from estimator.api.sweep import fit_table
from estimator.engines import runs_gguf
from estimator.units import Range
from estimator.weights import HF_FORMATS

NO_ENGINE = "no_engine"


@dataclass(frozen=True)
class CardFit:
    """One model on one card. `quant` is the least-compressed quant of the ladder that fits
    (None when none does); verdict and need_bytes are that quant's, or the most compressed
    ladder quant's when none fits. The speed is the decode tok/s of one sequence with the
    calibration group's low/high, None when nothing fits. `engine`/`backend` are the card's
    default engine; verdict NO_ENGINE when no engine in the catalog runs on the card."""

    quant: str | None
    verdict: str
    need_bytes: int
    usable_bytes: int
    decode_tokens_per_s: Range | None
    engine: str = ""
    backend: str = ""
    # False when no published measurement covers the engine on this backend: the speed
    # uses a wider group's factors, so rankings leave the card out (calibrated_speed).
    calibrated: bool = True

    @property
    def calibrated_speed(self) -> float | None:
        """The decode estimate when it may be ranked against other cards, else None."""
        speed = self.decode_tokens_per_s
        return speed.estimate if speed is not None and self.calibrated else None


def card_request(
    model: LLMModel,
    accelerator: Accelerator,
    *,
    quant: str,
    context_tokens: int,
    choice: hardware.EngineChoice | None = None,
) -> Request:
    """The request an explore row stands for: one board, the configurator's defaults and
    measured sizes, under `choice` (llama.cpp when None). Raises RequestError."""
    setup = Setup(quant=quant, context_tokens=context_tokens)
    if choice is not None:
        setup = replace(setup, engine=choice.engine, backend=choice.backend)
    return sizing_request(
        model=model, accelerator=accelerator, setup=setup, measured=measured_weights(model)
    )


def model_on_cards(
    model: LLMModel,
    accelerators: Sequence[Accelerator],
    *,
    quants: Sequence[str],
    context_tokens: int,
    matrix: hardware.SupportMatrix,
) -> list[CardFit]:
    """One CardFit per accelerator (each must pass can_size_accelerator); `quants` is the
    GGUF ladder, least compressed first (cards whose engine loads HF checkpoints climb
    recommend.HF_LADDER down to the same 3-bit floor). Raises estimator.api.RequestError
    for a context the model rejects. Cached per model, context, ladder and cards with
    their engines; catalog data is covered by the cache's catalog version."""
    choices = tuple(matrix.default_for(card) for card in accelerators)
    fits = remembered(
        "model-on-cards",
        model_parts(model, accelerators, choices, quants, context_tokens),
        lambda: tuple(fits_by_pair(model, accelerators, choices, list(quants), context_tokens)),
    )
    return list(fits)


def model_fingerprint(model: LLMModel) -> str:
    """A digest of what a sweep reads of a model: its config and measured file sizes."""
    measured = sorted((w.quant, w.format, w.file_bytes) for w in measured_weights(model).values())
    text = json.dumps([model.config, measured], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def card_fingerprint(card: Accelerator, choice: hardware.EngineChoice | None) -> tuple[object, ...]:
    """What a sweep reads of a card: the estimator Device (memory, bandwidth, compute,
    devices per board, vendor, speed class) and its engine."""
    return (device(card), _engine_key(choice))


def _engine_key(choice: hardware.EngineChoice | None) -> tuple[str, str] | None:
    """The part of a cache key that names a card's engine and backend (None: no engine)."""
    return (choice.engine, choice.backend) if choice else None


def pair_parts(
    model_fp: str, card_fp: tuple[object, ...], quants: Sequence[str], context_tokens: int
) -> tuple[object, ...]:
    """The content key of one model on one card (catalog.sizing.cache.lookup_many)."""
    return (model_fp, card_fp, tuple(quants), context_tokens)


def fits_by_pair(
    model: LLMModel,
    accelerators: Sequence[Accelerator],
    choices: Sequence[hardware.EngineChoice | None],
    quants: list[str],
    context_tokens: int,
) -> list[CardFit]:
    """sweep_cards, reading the pairs already computed (by content) and sweeping only the
    cards whose pair is missing: after an edit, only what the edit touched."""
    model_fp = model_fingerprint(model)
    parts = [
        pair_parts(model_fp, card_fingerprint(card, choice), quants, context_tokens)
        for card, choice in zip(accelerators, choices, strict=True)
    ]
    # A card page may have kept the estimator's refusal for a pair: here it is a miss, and
    # the sweep raises it for the whole model as before.
    found = {i: v for i, v in lookup_many("fit", parts).items() if isinstance(v, CardFit)}
    missing = [i for i in range(len(parts)) if i not in found]
    if missing:
        fresh = sweep_cards(
            model,
            [accelerators[i] for i in missing],
            [choices[i] for i in missing],
            quants,
            context_tokens,
        )
        found.update(zip(missing, fresh, strict=True))
        store_many("fit", [(parts[i], found[i]) for i in missing])
    return [found[i] for i in range(len(parts))]


def model_parts(
    model: LLMModel,
    accelerators: Sequence[Accelerator],
    choices: Sequence[hardware.EngineChoice | None],
    quants: Sequence[str],
    context_tokens: int,
) -> tuple[object, ...]:
    """What a model_on_cards entry depends on besides catalog data (warm.py fills it)."""
    cards = tuple(
        (card.pk, _engine_key(choice)) for card, choice in zip(accelerators, choices, strict=True)
    )
    return (model.pk, context_tokens, tuple(quants), cards)


def models_on_card(
    accelerator: Accelerator,
    models: Sequence[LLMModel],
    *,
    quants: Sequence[str],
    context_tokens: int,
    matrix: hardware.SupportMatrix,
) -> list[CardFit | str]:
    """`accelerator` under each of `models`, in order: its CardFit, or the estimator's
    message when it refuses the model at this context (RequestError). The card-across-
    models page; one cache entry per card, context, ladder and model list."""
    choice = matrix.default_for(accelerator)
    return list(
        remembered(
            "models-on-card",
            card_parts(accelerator, choice, models, quants, context_tokens),
            lambda: tuple(
                _answers_by_pair(accelerator, choice, models, list(quants), context_tokens)
            ),
        )
    )


def _answers_by_pair(
    accelerator: Accelerator,
    choice: hardware.EngineChoice | None,
    models: Sequence[LLMModel],
    quants: list[str],
    context_tokens: int,
) -> list[CardFit | str]:
    """one_card for each model, reading the pairs already computed (by content): the
    pairs a model page's sweep or the warm-up stored serve this card's page too."""
    card_fp = card_fingerprint(accelerator, choice)
    parts = [pair_parts(model_fingerprint(m), card_fp, quants, context_tokens) for m in models]
    found: dict[int, CardFit | str] = {
        i: v for i, v in lookup_many("fit", parts).items() if isinstance(v, CardFit | str)
    }
    missing = [i for i in range(len(parts)) if i not in found]
    done: list[int] = []
    try:
        for i in missing:
            deadline.check()  # between models
            found[i] = one_card(models[i], accelerator, choice, quants, context_tokens)
            done.append(i)
    finally:
        # The pairs done are kept even when the time limit stops the sweep: asked again,
        # it goes on from there.
        store_many("fit", [(parts[i], found[i]) for i in done])
    return [found[i] for i in range(len(parts))]


def card_parts(
    accelerator: Accelerator,
    choice: hardware.EngineChoice | None,
    models: Sequence[LLMModel],
    quants: Sequence[str],
    context_tokens: int,
) -> tuple[object, ...]:
    """What a models_on_card entry depends on besides catalog data (warm.py fills it)."""
    pks = tuple(model.pk for model in models)
    return (accelerator.pk, _engine_key(choice), pks, tuple(quants), context_tokens)


def one_card(
    model: LLMModel,
    accelerator: Accelerator,
    choice: hardware.EngineChoice | None,
    quants: list[str],
    context_tokens: int,
) -> CardFit | str:
    try:
        return sweep_cards(model, [accelerator], [choice], quants, context_tokens)[0]
    except RequestError as exc:
        return exc.message


def sweep_cards(
    model: LLMModel,
    accelerators: Sequence[Accelerator],
    choices: Sequence[hardware.EngineChoice | None],
    quants: list[str],
    context_tokens: int,
) -> list[CardFit]:
    """The uncached sweep: one CardFit per card, under its engine choice. Raises
    RequestError for a context the model rejects."""
    sizes = measured_bytes(measured_weights(model))
    groups: dict[hardware.EngineChoice, list[int]] = {}
    fits: dict[int, CardFit] = {}
    for index, (card, choice) in enumerate(zip(accelerators, choices, strict=True)):
        deadline.check()  # between boards: each may be a full estimate per quant
        if choice is None:
            fits[index] = CardFit(None, NO_ENGINE, 0, 0, None)
        elif hardware.chips(card) > 1:
            fits[index] = _board_fit(model, card, choice, quants, context_tokens)
        else:
            groups.setdefault(choice, []).append(index)
    for choice, indices in groups.items():
        deadline.check()
        ladder = _ladder(choice, quants, native_format(model.config or {}))
        probe = accelerators[indices[0]]
        request = card_request(
            model, probe, quant=ladder[0], context_tokens=context_tokens, choice=choice
        )
        usable = sizeable_quants(request, ladder)
        targets = [device(accelerators[i]) for i in indices]
        # One row per card, the first quant down the ladder that fits (else the last):
        # all _best_fit reads, without the decode speeds of the quants it skips.
        rows = (
            sweep(request, targets, usable, measured_bytes=sizes, first_fit=True) if usable else []
        )
        for position, index in enumerate(indices):
            own = rows[position : position + 1]
            fits[index] = replace(_best_fit(own), engine=choice.engine, backend=choice.backend)
    return [fits[index] for index in range(len(accelerators))]


def _ladder(choice: hardware.EngineChoice, quants: Sequence[str], native: str = "") -> list[str]:
    """The page's GGUF ladder for GGUF engines (recommend's when the catalog has none);
    the HF ladder for the others; from the published format down for a model that ships
    quantized (requests.native_ladder)."""
    if runs_gguf(choice.engine) and quants:
        return native_ladder(quants, native, gguf=True)
    return family_ladder(choice.engine, native)


def _board_fit(
    model: LLMModel,
    card: Accelerator,
    choice: hardware.EngineChoice,
    quants: list[str],
    context_tokens: int,
) -> CardFit:
    """A board of several devices: the full estimate over all of them, quant by quant
    down the ladder until one fits (a sweep sizes single devices only)."""
    last = CardFit(None, "does_not_fit", 0, 0, None, choice.engine, choice.backend)
    for quant in _ladder(choice, quants, native_format(model.config or {})):
        try:
            request = card_request(
                model, card, quant=quant, context_tokens=context_tokens, choice=choice
            )
            result = run_estimate(request)
        except (RequestError, ValueError):
            continue
        need, usable = result.per_device_bytes, result.usable_bytes_per_device
        if result.fit.verdict != "does_not_fit":
            return CardFit(
                quant,
                result.fit.verdict,
                need,
                usable,
                result.decode_tokens_per_s,
                choice.engine,
                choice.backend,
                result.speed_calibrated,
            )
        last = replace(last, need_bytes=need, usable_bytes=usable)
    return last


def _best_fit(rows: Sequence[SweepRow]) -> CardFit:
    """The first fitting row (rows come least compressed first), with its decode range."""
    if not rows:
        return CardFit(None, "does_not_fit", 0, 0, None)
    for row in rows:
        if row.verdict != "does_not_fit":
            decode = Range(
                row.decode_tokens_per_s, row.decode_low_tokens_per_s, row.decode_high_tokens_per_s
            )
            return CardFit(
                row.quant,
                row.verdict,
                row.per_device_bytes,
                row.usable_bytes_per_device,
                decode,
                calibrated=row.speed_calibrated,
            )
    last = rows[-1]
    return CardFit(None, last.verdict, last.per_device_bytes, last.usable_bytes_per_device, None)


# --- the configurator: the smallest catalog card for each quant ---------------------------


@dataclass(frozen=True)
class CardChoice:
    """Which catalog card a figure recommends: per quant, the card with the least memory
    that fits it; and every card's usable bytes, to place other memory figures."""

    by_quant: dict[str, Accelerator]
    usable: list[tuple[Accelerator, int]]  # (card, usable bytes) by ascending memory

    def smallest_holding(self, need_bytes: int) -> Accelerator | None:
        """The card with the least memory whose usable bytes hold `need_bytes`."""
        return next((card for card, usable in self.usable if usable >= need_bytes), None)


def _order(card: Accelerator) -> tuple[float, float]:
    """Least memory first; of equal memory, the cheaper card (unpriced last)."""
    return (card.memory_gb or 0, card.price_usd or float("inf"))


def smallest_cards(
    request: Request,
    accelerators: Sequence[Accelerator],
    sizes: Mapping[str, int],
    matrix: hardware.SupportMatrix,
) -> CardChoice:
    """The request's model and workload on every single-device card (no offload) for every
    quant of its family, each card under its own default engine (the support matrix):
    cards whose engine loads the other family (a TPU's vLLM for a GGUF page) are left out
    of by_quant; `usable` holds every card that has an engine. `sizes`: measured GGUF file
    sizes by quant (requests.measured_bytes). Cached per catalog version; the GPU count,
    offload and tensor parallelism, which every card's request overrides (_single), are
    left out of the key, and so is the sized quant (any_quant: every quant of the family is
    swept), so one answer serves every GPU count and weights format of a setup. The cache
    keeps positions in `accelerators`, not the rows: unpickling 70 cards cost more than
    the sweep."""
    base = replace(
        request,
        device=replace(request.device, count=1),
        workload=replace(request.workload, offload=Offload(), tensor_parallel=1),
    )
    cards = tuple(card.pk for card in accelerators)
    by_quant, usable = remembered(
        "smallest-cards",
        (any_quant(base), cards, tuple(sorted(sizes.items()))),
        lambda: _smallest_cards(base, accelerators, sizes, matrix),
    )
    return CardChoice(
        {quant: accelerators[i] for quant, i in by_quant},
        [(accelerators[i], bytes_) for i, bytes_ in usable],
    )


# (quant, card position) per quant; (card position, usable bytes) by ascending memory.
_Chosen = tuple[tuple[tuple[str, int], ...], tuple[tuple[int, int], ...]]


def _smallest_cards(
    request: Request,
    accelerators: Sequence[Accelerator],
    sizes: Mapping[str, int],
    matrix: hardware.SupportMatrix,
) -> _Chosen:
    gguf = request.weights.format == "gguf"
    files = dict(sizes) if gguf else {}
    by_quant: dict[str, int] = {}
    usable: list[tuple[int, int]] = []
    order = [_order(card) for card in accelerators]
    for group in _card_groups(accelerators, matrix):
        single = _single(request, group.choice)
        same_family = runs_gguf(group.choice.engine) == gguf
        # A card of the other family only reports its usable bytes: one quant sizes that.
        quants = (
            sizeable_quants(single, MATRIX_GGUF_QUANTS if gguf else HF_FORMATS)
            if same_family
            else sizeable_quants(single, family_ladder(group.choice.engine))[:1]
        )
        if not quants:
            continue
        # Only whether each cell fits and each card's usable bytes are read: the sweep's
        # memory half (fit_table), without its decode speeds.
        table = fit_table(single, group.devices, quants, measured_bytes=files)
        for i, card_usable, card_fits in zip(
            group.positions, table.usable_bytes, table.fits, strict=True
        ):
            usable.append((i, card_usable))
            if not same_family:
                continue
            for quant, fits in zip(quants, card_fits, strict=True):
                best = by_quant.get(quant)
                if fits and (best is None or order[i] < order[best]):
                    by_quant[quant] = i
    usable.sort(key=lambda pair: order[pair[0]])
    return tuple(by_quant.items()), tuple(usable)


@dataclass(frozen=True)
class _CardGroup:
    """Single-device cards the estimator can size under one default engine: their
    positions in the caller's list and their estimator Devices."""

    choice: hardware.EngineChoice
    positions: tuple[int, ...]
    devices: tuple[Device, ...]


def _card_groups(
    accelerators: Sequence[Accelerator], matrix: hardware.SupportMatrix
) -> tuple[_CardGroup, ...]:
    """_by_engine's groups with each card's Device, kept in this process per catalog
    version and card list: every setup sized against the same cards shares them."""

    def build() -> tuple[_CardGroup, ...]:
        return tuple(
            _CardGroup(
                choice,
                tuple(positions),
                tuple(device(accelerators[i]) for i in positions),
            )
            for choice, positions in _by_engine(accelerators, matrix).items()
        )

    return remembered_here("card-groups", tuple(card.pk for card in accelerators), build)


def _by_engine(
    accelerators: Sequence[Accelerator], matrix: hardware.SupportMatrix
) -> dict[hardware.EngineChoice, list[int]]:
    """Positions of the single-device cards the estimator can size, grouped by their
    default engine."""
    groups: dict[hardware.EngineChoice, list[int]] = {}
    for i, card in enumerate(accelerators):
        choice = matrix.default_for(card)
        if choice is not None and can_size_accelerator(card) and hardware.chips(card) == 1:
            groups.setdefault(choice, []).append(i)
    return groups


def any_quant(request: Request) -> Request:
    """`request` without its quant, dtype and file size, as a cache key for a sweep of
    every quant of its family: the sweep sets each quant's weights itself and reads only
    the family's format, imatrix and group size of the request's own (estimator.api.sweep
    ._weights_spec), so the answer is the same whichever quant of the family was sized."""
    weights = replace(request.weights, quant=None, dtype=None, file_bytes=None)
    return replace(request, weights=weights)


def _single(request: Request, choice: hardware.EngineChoice) -> Request:
    """The request on one device under `choice`'s engine and backend, without offload;
    the page's KV type stays when the engine family accepts it (else f16)."""
    same = runs_gguf(choice.engine) == runs_gguf(request.engine.name)
    kv = request.workload.kv_cache_dtype if same else "f16"
    return replace(
        request,
        engine=replace(request.engine, name=choice.engine, backend=choice.backend),
        device=replace(request.device, count=1),
        workload=replace(request.workload, offload=Offload(), tensor_parallel=1, kv_cache_dtype=kv),
    )
