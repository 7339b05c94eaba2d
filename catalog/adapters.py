"""The one place where ORM rows meet the estimator: rows in, estimator specs out."""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from catalog import hardware
from catalog.models import Accelerator, Architecture, LLMModel, ModelWeights
from estimator import cost, recommend
from estimator.api import (
    Device,
    Offload,
    Request,
    RequestError,
    SweepRow,
    WeightsSpec,
    estimate,
    estimate_or_error,
    parse_request,
    run_estimate,
    sweep,
)
from estimator.api import cache as estimator_cache
from estimator.api.run import offloaded_layer_count
from estimator.api.schema import LLAMA_FAMILY
from estimator.model import ModelSpec, parse_hf_config
from estimator.units import GB, Range
from estimator.weights import (
    EXTRA_GGUF_FILE_TYPES,
    GGUF_FILE_TYPES,
    HF_FORMATS,
    WeightsFormat,
    weights_breakdown,
)

if TYPE_CHECKING:
    from pricing.models import CloudOffer


def spec_from_config(config: Mapping[str, Any]) -> ModelSpec:
    """Parse a config.json; raises estimator.model.ConfigError when it cannot."""
    return parse_hf_config(config)


def model_spec(model: LLMModel) -> ModelSpec:
    return spec_from_config(model.config)


def estimator_knows(fmt: str, quant: str) -> bool:
    if fmt == "gguf":
        return quant in GGUF_FILE_TYPES or quant in EXTRA_GGUF_FILE_TYPES
    return fmt == "hf" and quant in HF_FORMATS


def weights_format(weights: ModelWeights) -> WeightsFormat:
    return WeightsFormat(family=weights.format, name=weights.quant, file_bytes=weights.file_bytes)


def computed_bytes(spec: ModelSpec, fmt: str, quant: str) -> int | None:
    """The estimator's size of the text model in this format; None for a format it lacks.

    Multimodal towers are excluded, as in weights_breakdown (a GGUF mmproj is its own file).
    """
    if not estimator_knows(fmt, quant):
        return None
    return weights_breakdown(spec, WeightsFormat(family=fmt, name=quant)).total_bytes


def _attention(spec: ModelSpec) -> str:
    if spec.mla is not None:
        base = "mla"
    elif spec.n_kv_heads == spec.n_heads:
        base = "mha"
    elif spec.n_kv_heads == 1:
        base = "mqa"
    else:
        base = "gqa"
    extra = sorted({layer.attention for layer in spec.layers} - {"full", "mla"})
    return "+".join([base, *extra])


def spec_fields(spec: ModelSpec) -> dict[str, Any]:
    """Model fields the estimator derives from a config.json."""
    kinds = {layer.attention for layer in spec.layers}
    if "linear" in kinds:
        architecture = Architecture.HYBRID
    elif spec.mla is not None and spec.is_moe:
        architecture = Architecture.MLA
    elif spec.is_moe:
        architecture = Architecture.MOE
    else:
        architecture = Architecture.DENSE
    return {
        "params_total": spec.params_total,
        "params_active": spec.params_active,
        "architecture": str(architecture),
        "attention": _attention(spec),
        "model_type": spec.model_type,
    }


# --- the configurator: one model on one accelerator --------------------------------------

# Catalog vendors are display names ("NVIDIA", "Moore Threads"); the estimator knows a few
# lower-case families. Which engine and backend run on a card is the support matrix's
# business (catalog.hardware), not the vendor's.
ESTIMATOR_VENDORS = ("nvidia", "amd", "apple", "intel")
GGUF_QUANTS: tuple[str, ...] = GGUF_FILE_TYPES + EXTRA_GGUF_FILE_TYPES
# Quants the configurator's matrix lists: the file types llama.cpp's quantize tool offers.
MATRIX_GGUF_QUANTS: tuple[str, ...] = GGUF_FILE_TYPES
KV_ALTERNATIVES = {"llama": ("q8_0", "q4_0"), "server": ("fp8",)}
FINETUNE_METHODS = ("qlora", "lora", "full")


@dataclass(frozen=True)
class Setup:
    """The configurator's inputs, validated by its form (units in the names). `gpus` counts
    boards: a board of several devices (MI250X: 2) gives gpus x chips_per_board devices.
    `backend` "" lets the estimator pick its default for the vendor."""

    quant: str
    context_tokens: int
    gpus: int = 1
    sequences: int = 1
    kv: str = "f16"
    engine: str = "llama.cpp"
    offload_percent: int = 0
    prompt_tokens: int = 512
    output_tokens: int = 256
    backend: str = ""
    offload_moe_experts: bool = False  # llama.cpp --cpu-moe: every routed expert in host RAM
    host_bandwidth_gbps: float | None = None  # None: the estimator's DDR5 default
    # Further estimator "engine" settings a published run used (gpu_memory_utilization,
    # n_ubatch, flash_attention, max_num_seqs, ...): validate_portal replays logs with them.
    engine_options: tuple[tuple[str, Any], ...] = ()


def is_gguf(quant: str) -> bool:
    return quant in GGUF_QUANTS


def estimator_vendor(accelerator: Accelerator) -> str:
    vendor = accelerator.vendor.strip().lower()
    return vendor if vendor in ESTIMATOR_VENDORS else "other"


def can_size_accelerator(accelerator: Accelerator) -> bool:
    return bool(accelerator.memory_gb or accelerator.memory_gib) and bool(
        accelerator.bandwidth_gbps
    )


def device_section(accelerator: Accelerator, *, count: int = 1) -> dict[str, Any]:
    """The request's "device" for `count` boards: count x chips_per_board devices, each
    with the memory it reports to engines (hardware.device_memory_bytes, given to the
    estimator in decimal GB as its contract says) and its share of the board's bandwidth
    and compute. The speed class follows the memory technology. Blank figures are left
    out so the estimator's documented defaults apply."""
    device: dict[str, Any] = {
        "memory_gb": hardware.device_memory_bytes(accelerator) / GB,
        "bandwidth_gbps": hardware.per_device(accelerator.bandwidth_gbps, accelerator),
        "count": count * hardware.chips(accelerator),
        "memory_kind": accelerator.memory_kind,
        "vendor": estimator_vendor(accelerator),
        "name": accelerator.name,
    }
    device_class = hardware.speed_class(accelerator)
    if device_class:
        device["device_class"] = device_class
    optional = {
        "fp16_tflops": hardware.per_device(accelerator.fp16_tflops, accelerator),
        "fp8_tflops": hardware.per_device(accelerator.fp8_tflops, accelerator),
        "int8_tops": hardware.per_device(accelerator.int8_tops, accelerator),
        "interconnect_gbps": accelerator.interconnect_gbps,
    }
    device.update({k: v for k, v in optional.items() if v})
    return device


def device_spec(accelerator: Accelerator) -> Device:
    """One device of the accelerator as the estimator's Device (for sweeps)."""
    section = {**device_section(accelerator), "count": 1}
    return parse_request({"model": {"hf_config": {}}, "device": section}).device


def measured_weights(model: LLMModel) -> dict[str, ModelWeights]:
    """The model's weights rows with a measured file size, by quant (prefetched rows)."""
    return {w.quant: w for w in model.weights.all() if w.file_bytes}


def weights_section(quant: str, measured: Mapping[str, ModelWeights]) -> dict[str, Any]:
    if not is_gguf(quant):
        return {"format": "hf", "dtype": quant}
    section: dict[str, Any] = {"format": "gguf", "quant": quant}
    row = measured.get(quant)
    if row is not None and row.format == "gguf":
        section["file_bytes"] = row.file_bytes
    return section


def configurator_request(
    *,
    model: LLMModel,
    accelerator: Accelerator,
    setup: Setup,
    measured: Mapping[str, ModelWeights],
) -> dict[str, Any]:
    """The estimator request for one configuration. llama.cpp splits layers over several
    GPUs (-ts); vLLM-like engines use tensor parallelism over all of them."""
    llama = setup.engine in LLAMA_FAMILY
    device = device_section(accelerator, count=setup.gpus)
    if setup.host_bandwidth_gbps:
        device["host_bandwidth_gbps"] = setup.host_bandwidth_gbps
    engine: dict[str, Any] = {"name": setup.engine, **dict(setup.engine_options)}
    if setup.backend:
        engine["backend"] = setup.backend
    return {
        "model": {"hf_config": model.config},
        "weights": weights_section(setup.quant, measured),
        "device": device,
        "engine": engine,
        "workload": {
            "context_tokens": setup.context_tokens,
            "concurrent_sequences": setup.sequences,
            "prompt_tokens": setup.prompt_tokens,
            "output_tokens": setup.output_tokens,
            "kv_cache_dtype": setup.kv,
            "tensor_parallel": 1 if llama else device["count"],
            "offload": {
                "fraction": setup.offload_percent / 100,
                "moe_experts": setup.offload_moe_experts,
            },
        },
    }


def model_context_limit(model: LLMModel) -> int | None:
    """The longest context to offer for this model: its config's maximum (what the
    estimator accepts), capped by the published context where the catalog has one, since a
    sibling or stand-in config can allow more than the model does (Llama 3 8B: 8,192 against
    Llama 3.1's 131,072). None when the estimator cannot parse the config."""
    probe = {"memory_gb": 1, "bandwidth_gbps": 1}  # parse_request needs a device
    try:
        request = parse_request({"model": {"hf_config": model.config}, "device": probe})
        limit = parsed_model(request).max_context_tokens
    except RequestError:
        return None
    published = model.max_context_tokens
    return min(limit, published) if published else limit


def parsed_request(request: dict[str, Any]) -> Request:
    """The estimator's validated, defaulted request (raises RequestError)."""
    return parse_request(request)


def parsed_model(request: Request) -> ModelSpec:
    """The cached tensor inventory of a parsed request's model."""
    return estimator_cache.model_spec(request.model.hf_config_json)


def offloaded_layers(request: Request) -> tuple[int, int]:
    """(layers in host memory, layers in the model) as the estimator places them."""
    spec = parsed_model(request)
    return offloaded_layer_count(request, spec), spec.n_layers


def estimate_result(request: dict[str, Any]) -> dict[str, Any]:
    """estimator.api.estimate; raises RequestError naming the field at fault."""
    return estimate(request)


def fallback_quant(engine: str) -> str:
    """The quant a setup takes when nothing fits, of the engine's weights family."""
    return "Q4_K_M" if _llama_like(engine) else "bf16"


def default_quant(request: dict[str, Any]) -> str:
    """The least-compressed quant that fits (estimator.recommend's ladder and floor).

    One GPU without offload is exactly what sweep evaluates, so the ladder costs one sweep;
    other setups take recommend.best_quant, which runs a full estimate per rung.
    Falls back to Q4_K_M (bf16 for vLLM-like engines) when nothing fits.
    """
    engine = request["engine"]["name"]
    ladder = recommend.GGUF_LADDER if _llama_like(engine) else recommend.HF_LADDER
    fallback = fallback_quant(engine)
    request = {**request, "weights": weights_section(fallback, {})}
    parsed = parse_request(request)
    names = [name for name, bits in ladder if bits >= recommend.DEFAULT_MIN_BITS]
    if parsed.device.count == 1 and parsed.workload.offload.fraction == 0:
        try:
            rows = sweep(parsed, [parsed.device], _sizeable(parsed, names))
        except RequestError:
            return fallback
        fits = {row.quant for row in rows if row.verdict != "does_not_fit"}
        return next((name for name in names if name in fits), fallback)
    choice = recommend.best_quant(parsed, run_estimate)
    return choice.name if choice else fallback


def quant_matrix(
    request: dict[str, Any], measured: Mapping[str, ModelWeights]
) -> list[dict[str, Any]]:
    """Every quant of the request's family on one of its accelerators (estimator.api.sweep:
    one card, no offload). Quants with a measured file are sized from that file."""
    parsed = parse_request(request)
    gguf = parsed.weights.format == "gguf"
    quants = MATRIX_GGUF_QUANTS if gguf else HF_FORMATS
    single = replace(
        parsed,
        device=replace(parsed.device, count=1),
        workload=replace(parsed.workload, offload=Offload()),
    )
    sizes = measured_bytes(measured) if gguf else {}
    return [
        {
            "quant": row.quant,
            "weights_bytes": row.weights_bytes,
            "per_device_bytes": row.per_device_bytes,
            "verdict": row.verdict,
            # No speed for what does not fit: nothing would run at that figure.
            "decode_tokens_per_s": (
                None if row.verdict == "does_not_fit" else row.decode_tokens_per_s
            ),
            "measured": row.quant in sizes,
        }
        for row in sweep(single, [single.device], _sizeable(single, quants), measured_bytes=sizes)
    ]


def measured_bytes(measured: Mapping[str, ModelWeights]) -> dict[str, int]:
    """GGUF quant -> measured file size, for estimator.api.sweep."""
    return {
        quant: row.file_bytes
        for quant, row in measured.items()
        if row.format == "gguf" and row.file_bytes
    }


def _sizeable(request: Request, quants: Sequence[str]) -> list[str]:
    """The quants the estimator can size for this model (MXFP4_MOE needs experts)."""
    out = []
    for quant in quants:
        spec = (
            WeightsSpec("gguf", quant=quant)
            if request.weights.format == "gguf"
            else WeightsSpec("hf", dtype=quant)
        )
        try:
            estimator_cache.weights(request.model.hf_config_json, spec)
        except ValueError:
            continue
        out.append(quant)
    return out


@dataclass(frozen=True)
class CardChoice:
    """Which catalog card a figure recommends: per quant, the card with the least memory
    that fits it; and every card's usable bytes, to place other memory figures."""

    by_quant: dict[str, Accelerator]
    usable: list[tuple[Accelerator, int]]  # (card, usable bytes) by ascending memory

    def smallest_holding(self, need_bytes: int) -> Accelerator | None:
        """The card with the least memory whose usable bytes hold `need_bytes`."""
        return next((card for card, usable in self.usable if usable >= need_bytes), None)


def smallest_cards(
    request: dict[str, Any],
    accelerators: Sequence[Accelerator],
    measured: Mapping[str, ModelWeights],
    matrix: hardware.SupportMatrix,
) -> CardChoice:
    """The request's model and workload on every single-device card (no offload) for every
    quant of its family, each card under its own default engine (the support matrix):
    cards whose engine loads the other family (a TPU's vLLM for a GGUF page) are left out
    of by_quant; `usable` holds every card that has an engine."""
    parsed = parse_request(request)
    gguf = parsed.weights.format == "gguf"
    sizes = measured_bytes(measured) if gguf else {}
    by_quant: dict[str, Accelerator] = {}
    usable: list[tuple[Accelerator, int]] = []
    order = lambda card: (card.memory_gb or 0, card.price_usd or float("inf"))  # noqa: E731
    for choice, cards in _by_engine(accelerators, matrix).items():
        single = _single(parsed, choice)
        same_family = _llama_like(choice.engine) == gguf
        # A card of the other family only reports its usable bytes: one quant sizes that.
        quants = (
            _sizeable(single, MATRIX_GGUF_QUANTS if gguf else HF_FORMATS)
            if same_family
            else _sizeable(single, _family_quants(choice))[:1]
        )
        if not quants:
            continue
        rows = sweep(single, [device_spec(c) for c in cards], quants, measured_bytes=sizes)
        for row in rows:
            card = cards[row.device_index]
            if row.quant == quants[0]:
                usable.append((card, row.usable_bytes_per_device))
            best = by_quant.get(row.quant)
            fits = row.verdict != "does_not_fit"
            if same_family and fits and (best is None or order(card) < order(best)):
                by_quant[row.quant] = card
    return CardChoice(by_quant, sorted(usable, key=lambda pair: order(pair[0])))


def _by_engine(
    accelerators: Sequence[Accelerator], matrix: hardware.SupportMatrix
) -> dict[hardware.EngineChoice, list[Accelerator]]:
    """Single-device cards the estimator can size, grouped by their default engine."""
    groups: dict[hardware.EngineChoice, list[Accelerator]] = {}
    for card in accelerators:
        choice = matrix.default_for(card)
        if choice is not None and can_size_accelerator(card) and hardware.chips(card) == 1:
            groups.setdefault(choice, []).append(card)
    return groups


def _single(parsed: Request, choice: hardware.EngineChoice) -> Request:
    """The request on one device under `choice`'s engine and backend, without offload;
    the page's KV type stays when the engine family accepts it (else f16)."""
    same = _llama_like(choice.engine) == _llama_like(parsed.engine.name)
    kv = parsed.workload.kv_cache_dtype if same else "f16"
    return replace(
        parsed,
        engine=replace(parsed.engine, name=choice.engine, backend=choice.backend),
        device=replace(parsed.device, count=1),
        workload=replace(parsed.workload, offload=Offload(), tensor_parallel=1, kv_cache_dtype=kv),
    )


def _family_quants(choice: hardware.EngineChoice) -> list[str]:
    """The quality ladder of the engine's weights family, least compressed first."""
    ladder = recommend.GGUF_LADDER if _llama_like(choice.engine) else recommend.HF_LADDER
    return [name for name, bits in ladder if bits >= recommend.DEFAULT_MIN_BITS]


def context_points(limit: int, start: int = 4096) -> list[int]:
    """4K, 8K, ... (powers of two) below the model's maximum, which closes the list."""
    points = []
    tokens = start
    while tokens < limit:
        points.append(tokens)
        tokens *= 2
    return [*points, limit]


def memory_by_context(request: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    """Per-device memory at each context point. One card without offload is exactly what
    sweep computes; other setups need the full estimate at each point."""
    parsed = parse_request(request)
    single = parsed.device.count == 1 and parsed.workload.offload.fraction == 0
    out = []
    for tokens in context_points(limit):
        at = replace(parsed, workload=replace(parsed.workload, context_tokens=tokens))
        if single:
            row = sweep(at, [parsed.device], [parsed.weights.name])[0]
            need, usable, verdict = row.per_device_bytes, row.usable_bytes_per_device, row.verdict
        else:
            result = run_estimate(at)
            need, usable = result.per_device_bytes, result.usable_bytes_per_device
            verdict = result.fit.verdict
        out.append(
            {
                "context_tokens": tokens,
                "per_device_bytes": need,
                "usable_bytes_per_device": usable,
                "verdict": verdict,
            }
        )
    return out


def kv_alternatives(request: dict[str, Any], result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The same configuration with a quantized KV cache: q8_0 and q4_0 for llama.cpp-family
    engines, fp8 for vLLM-like ones (the dtypes each engine accepts)."""
    engine = request["engine"]["name"]
    options = KV_ALTERNATIVES["llama" if engine in LLAMA_FAMILY else "server"]
    out = []
    for dtype in options:
        if dtype == request["workload"]["kv_cache_dtype"]:
            continue
        workload = {**request["workload"], "kv_cache_dtype": dtype}
        other = estimate_or_error({**request, "workload": workload})
        if "error" in other:
            continue
        out.append(
            {
                "kv": dtype,
                "kv_cache_bytes": other["kv_cache_bytes"],
                "saved_bytes": result["kv_cache_bytes"] - other["kv_cache_bytes"],
                "verdict": other["fit"]["verdict"],
                "max_context_tokens": other["max_context_tokens"],
                "max_concurrent_sequences": other["max_concurrent_sequences"],
            }
        )
    return out


def finetune_memory(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Training memory for QLoRA, LoRA and full fine-tuning on this configuration's devices
    (the estimator's "finetune" section at its defaults: rank 16, batch 1, 2,048 tokens)."""
    out = []
    for method in FINETUNE_METHODS:
        result = estimate_or_error({**request, "finetune": {"method": method}})
        if "finetune" in result:
            out.append(result["finetune"])
    return out


def make_it_fit(request: dict[str, Any]) -> dict[str, Any]:
    """The estimator's recommendations: best quant and the ranked "make it fit" plan."""
    result = estimate({**request, "recommend": True})
    recommendations: dict[str, Any] = result.get("recommendations", {})
    return recommendations


# Cross-card sweeps (explore pages, recommendations, "fastest card")
#
# The explore pages ask one question of many (model, card) pairs: the least-compressed quant
# at or above a quality floor that fits one card, and its decode speed, with the
# configurator's request (configurator_request) at its defaults under the card's OWN
# default engine and backend (the support matrix): llama.cpp with GGUF quants where it
# runs, vLLM with HF checkpoints on a TPU. Cards are swept in groups sharing an engine and
# backend with estimator.api.sweep; a multi-device board (MI250X) takes full estimates over
# its devices. The answer is kept per model, context, ladder and card list, so a filter
# change or a second visitor costs a dictionary lookup. The configurator, compare and every
# recommendation box read the same CardFit, so a card's figure is the same on every page.

# Enough for the (model, context, floor) combinations a busy hour asks for; an entry holds
# one small CardFit per card.
_SWEEP_CACHE_SIZE = 512
_sweep_cache: collections.OrderedDict[tuple[Any, ...], tuple[CardFit, ...]] = (
    collections.OrderedDict()
)
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


def explore_request(
    model: LLMModel,
    accelerator: Accelerator,
    *,
    quant: str,
    context_tokens: int,
    gpus: int = 1,
    choice: hardware.EngineChoice | None = None,
) -> dict[str, Any]:
    """The request an explore row stands for (configurator defaults, measured sizes)."""
    setup = Setup(quant=quant, context_tokens=context_tokens, gpus=gpus)
    if choice is not None:
        setup = replace(setup, engine=choice.engine, backend=choice.backend)
    return configurator_request(
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
    for a context the model rejects."""
    choices = tuple(matrix.default_for(card) for card in accelerators)
    devices = tuple(
        (Device(**device_section(card)), choice)
        for card, choice in zip(accelerators, choices, strict=True)
    )
    key = (model.pk, model.updated, context_tokens, tuple(quants), devices)
    cached = _sweep_cache.get(key)
    if cached is None:
        cached = tuple(_sweep_cards(model, accelerators, choices, list(quants), context_tokens))
        _sweep_cache[key] = cached
        if len(_sweep_cache) > _SWEEP_CACHE_SIZE:
            _sweep_cache.popitem(last=False)
    else:
        _sweep_cache.move_to_end(key)
    return list(cached)


def _sweep_cards(
    model: LLMModel,
    accelerators: Sequence[Accelerator],
    choices: Sequence[hardware.EngineChoice | None],
    quants: list[str],
    context_tokens: int,
) -> list[CardFit]:
    sizes = measured_bytes(measured_weights(model))
    groups: dict[hardware.EngineChoice, list[int]] = {}
    fits: dict[int, CardFit] = {}
    for index, (card, choice) in enumerate(zip(accelerators, choices, strict=True)):
        if choice is None:
            fits[index] = CardFit(None, NO_ENGINE, 0, 0, None)
        elif hardware.chips(card) > 1:
            fits[index] = _board_fit(model, card, choice, quants, context_tokens)
        else:
            groups.setdefault(choice, []).append(index)
    for choice, indices in groups.items():
        ladder = _ladder(choice, quants)
        probe = accelerators[indices[0]]
        request = parse_request(
            explore_request(
                model, probe, quant=ladder[0], context_tokens=context_tokens, choice=choice
            )
        )
        usable = _sizeable(request, ladder)
        targets = [device_spec(accelerators[i]) for i in indices]
        rows = sweep(request, targets, usable, measured_bytes=sizes) if usable else []
        for position, index in enumerate(indices):
            own = rows[position * len(usable) : (position + 1) * len(usable)]
            fits[index] = replace(_best_fit(own), engine=choice.engine, backend=choice.backend)
    return [fits[index] for index in range(len(accelerators))]


def _ladder(choice: hardware.EngineChoice, quants: Sequence[str]) -> list[str]:
    """The page's GGUF ladder for GGUF engines (recommend's when the catalog has none);
    the HF ladder for the others."""
    if _llama_like(choice.engine) and quants:
        return list(quants)
    return _family_quants(choice)


def _llama_like(engine: str) -> bool:
    """Engines that load GGUF files (MLX loads its own safetensors)."""
    return engine in LLAMA_FAMILY and engine != "mlx"


def _board_fit(
    model: LLMModel,
    card: Accelerator,
    choice: hardware.EngineChoice,
    quants: list[str],
    context_tokens: int,
) -> CardFit:
    """A board of several devices: the full estimate over all of them, quant by quant
    down the ladder until one fits (a sweep sizes single devices only)."""
    ladder = _ladder(choice, quants)
    last = CardFit(None, "does_not_fit", 0, 0, None, choice.engine, choice.backend)
    for quant in ladder:
        request = explore_request(
            model, card, quant=quant, context_tokens=context_tokens, choice=choice
        )
        try:
            result = run_estimate(parse_request(request))
        except (RequestError, ValueError):
            continue
        verdict = result.fit.verdict
        if verdict != "does_not_fit":
            need, usable = result.per_device_bytes, result.usable_bytes_per_device
            decode = result.decode_tokens_per_s
            return CardFit(
                quant,
                verdict,
                need,
                usable,
                decode,
                choice.engine,
                choice.backend,
                result.speed_calibrated,
            )
        last = replace(
            last, need_bytes=result.per_device_bytes, usable_bytes=result.usable_bytes_per_device
        )
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


def usd_per_token_per_s(price_usd: float | None, fit: CardFit) -> float | None:
    """Purchase price per decode tok/s of one sequence (estimator.cost); None without a
    price, a fit or a calibrated speed."""
    return cost.usd_per_tokens_per_s(price_usd, fit.calibrated_speed)


# --- cost: cloud offers and owning the hardware (estimator.cost) --------------------------


def _per_million(usd_per_hour: float, tokens_per_s: float | None) -> float | None:
    if not tokens_per_s or tokens_per_s <= 0:
        return None
    return cost.usd_per_million_tokens(usd_per_hour, tokens_per_s)


def offer_costs(offers: Iterable[CloudOffer], result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each offer's hourly price per 1M output tokens (estimator.cost.usd_per_million_tokens)
    at the result's decode speed of one sequence and at its aggregate speed over the
    configured concurrency, cheapest at that concurrency first. Prices stay in the offer's
    currency (the formula is currency-neutral); offers must have an on-demand price."""
    one = result["decode_tokens_per_s"]["estimate"]
    many = result["aggregate_decode_tokens_per_s"]["estimate"]
    rows = []
    for offer in offers:
        per_hour = float(offer.on_demand_per_hour or 0)
        rows.append(
            {
                "offer": offer,
                "per_hour": per_hour,
                "per_million_one": _per_million(per_hour, one),
                "per_million_all": _per_million(per_hour, many),
            }
        )
    return sorted(rows, key=lambda r: (r["per_million_all"] is None, r["per_million_all"] or 0))


def rent_vs_buy(
    *,
    purchase_usd: float,
    power_w: float,
    usd_per_kwh: float,
    pue: float,
    hours_per_day: float,
    rent_usd_per_hour: float,
) -> dict[str, Any]:
    """estimator.cost.rent_vs_buy: monthly energy, amortisation (36 months) and rent for the
    same hours, and the months after which buying has cost less (None: never)."""
    own = cost.Ownership(
        purchase_usd=purchase_usd,
        power_w=power_w,
        electricity_usd_per_kwh=usd_per_kwh,
        pue=pue,
        hours_per_day=hours_per_day,
    )
    return asdict(cost.rent_vs_buy(own, rent_usd_per_hour))
