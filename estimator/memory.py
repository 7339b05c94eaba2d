"""Engine overhead beyond weights and KV cache, usable memory per device, and the fit verdict.

llama.cpp: compute buffer (the largest set of live intermediate tensors of one ubatch,
reserved by ggml-alloc at start-up) and the host output buffer.
vLLM-like engines: the torch activation peak measured while profiling a dummy batch of
max_num_batched_tokens, and non-torch memory (CUDA context, NCCL); the KV cache gets
gpu_memory_utilization x total minus weights and those two.
Constants fitted on estimator/data/validation/{llamacpp,vllm}_memory.csv are marked
"fitted"; tests/estimator/test_memory.py checks them against those files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from estimator.engines import engine_capability, llama_family
from estimator.kv import KVSettings, engine_cells
from estimator.units import GIB, MIB

if TYPE_CHECKING:
    from estimator.model.spec import ModelSpec

F32_BYTES = 4
# llama.cpp's --fit keeps 1024 MiB free per device by default ("-fitt, --fit-target MiB:
# target margin per device, default: 1024", llama.cpp PR #16653 / issue #18390): it covers
# the CUDA/ROCm context (~300-500 MiB) and allocator slack.
LLAMA_CPP_DEVICE_MARGIN_BYTES = 1024 * MIB

# vLLM v0.19 `vllm serve` defaults on an 80 GB GPU: max_num_batched_tokens 8192 (the
# sliding-window concurrency of row V040 in vllm_memory.csv requires >= 8065) and
# max_num_seqs 1024 (the dummy sampler batch; the activation peak grows with vocab x 1024).
VLLM_MAX_NUM_BATCHED_TOKENS = 8192
VLLM_MAX_NUM_SEQS = 1024
# Fitted on the 22 v0.19 H100 rows of vllm_memory.csv (see test_memory.py):
VLLM_ACTIVATION_BASE_BYTES = int(0.13 * GIB)  # fitted: intercept of the activation peak
VLLM_SAMPLER_BYTES_PER_SEQ_VOCAB = 14.4  # fitted: ~f32 logits x 3.6 copies in the sampler
VLLM_FORWARD_BYTES_PER_TOKEN_FF = 8.0  # fitted: gate/up f16 (4 B) + act (2 B) + slack
VLLM_NON_TORCH_TP1_BYTES = int(0.25 * GIB)  # median of the TP1 rows (0.24-0.26; 0.46 granite)
VLLM_NON_TORCH_TP_BYTES = int(2.07 * GIB)  # median of TP2/TP4 rows: NCCL + custom all-reduce
VLLM_CUDA_GRAPH_BYTES = int(0.9 * GIB)  # median "Graph capturing ... took" (0.65-1.55 GiB)

# fitted on llamacpp_memory.csv: the largest phase x 1.1 (ggml-alloc slack, small tensors)
LLAMA_CPP_COMPUTE_SLACK = 1.1
COMFORTABLE_RESERVE_FRACTION = 0.08


@dataclass(frozen=True)
class Overhead:
    """Engine memory beyond weights and KV cache, per device, with its named parts.

    total_bytes counts what takes memory from the budget the fit is judged against;
    outside_budget_bytes (vLLM CUDA graphs in v0.19) is reported but not in total_bytes.
    """

    engine: str
    total_bytes: int
    breakdown: dict[str, int]
    outside_budget_bytes: int
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Fit:
    """Does the per-device need fit the usable memory, and with how much to spare.

    reserve_bytes, reserve_fraction and utilisation are against the engine's default
    budget (usable); the verdict is against the most the engine can be given
    (max_usable, see fit_verdict), so a tight setup may have a negative reserve."""

    verdict: str  # "comfortable" | "tight" | "does_not_fit"
    reserve_bytes: int  # usable - needed (negative when it does not fit the default budget)
    reserve_fraction: float  # reserve / usable
    utilisation: float  # needed / usable
    margin_bytes: int = 0  # max_usable - usable: what the engine's defaults hold back
    within_default_margin: bool = False  # fits max_usable only: starts with start settings


def _ffn_width(model: ModelSpec) -> int:
    """Widest FFN intermediate one token produces: dense n_ff, or k routed + shared experts."""
    moe = (model.n_experts_per_token + model.n_shared_experts) * model.moe_intermediate_size
    return max(model.intermediate_size, moe)


def _attention_cells(
    model: ModelSpec, engine: str, context_tokens: int, sequences: int, n_ubatch: int
) -> int:
    """Largest number of KV cells one attention layer reads (the n_kv of its KQ matrix)."""
    settings = KVSettings(n_ubatch=n_ubatch)
    cells = [
        engine_cells(engine, layer, context_tokens, sequences, settings) for layer in model.layers
    ]
    return max(cells, default=0)


def llama_cpp_compute_phases(
    model: ModelSpec,
    *,
    context_tokens: int,
    sequences: int = 1,
    n_ubatch: int = 512,
    flash_attention: bool = True,
    mla_layout: str = "latent",
    holds_output: bool = True,
    engine: str = "llama.cpp",
) -> dict[str, int]:
    """Live f32 intermediates of one ubatch at the three peaks of llama.cpp's graph.

    hidden = 2 x n_embd x n_ubatch x 4 (residual + normed input) is live in every phase.
    output: + n_vocab x n_ubatch x 4 (logits; only on the device holding the output layer).
    attention: + n_kv x n_ubatch x n_head x 4 (KQ) without flash attention, or the f16 mask
    n_kv x n_ubatch x 2 with it; MLA with flash attention also decompresses K for prompt
    processing: + n_kv x n_head x (nope + rope) x 4 (and V for the latent_kv layout).
    ffn: + n_ubatch x 2 x n_ff x 4 (gate and up; MoE: k routed + shared expert widths).
    """
    hidden = 2 * model.hidden_size * n_ubatch * F32_BYTES
    n_kv = _attention_cells(model, engine, context_tokens, sequences, n_ubatch)
    if flash_attention:
        attention = n_kv * n_ubatch * 2 + _mla_decompress_bytes(model, n_kv, mla_layout)
    else:
        attention = n_kv * n_ubatch * model.n_heads * F32_BYTES
    logits = model.vocab_size * n_ubatch * F32_BYTES if holds_output else 0
    ffn = n_ubatch * (2 * _ffn_width(model) + model.n_experts) * F32_BYTES
    return {"output": hidden + logits, "attention": hidden + attention, "ffn": hidden + ffn}


def _mla_decompress_bytes(model: ModelSpec, n_kv: int, mla_layout: str) -> int:
    """K (and for latent_kv also V) expanded per head for prompt processing, f32."""
    mla = model.mla
    if mla is None or mla_layout == "full":
        return 0
    width = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    if mla_layout == "latent_kv":
        width += mla.v_head_dim
    return n_kv * model.n_heads * width * F32_BYTES


def llama_cpp_compute_buffer_bytes(
    model: ModelSpec,
    *,
    context_tokens: int,
    sequences: int = 1,
    n_ubatch: int = 512,
    flash_attention: bool = True,
    mla_layout: str = "latent",
    holds_output: bool = True,
) -> int:
    """llama.cpp's compute buffer on the busiest device: 1.1 x the largest of
    llama_cpp_compute_phases (ggml-alloc reuses memory between phases; 1.1 fitted).
    Accuracy on llamacpp_memory.csv is in test_memory.py; ik_llama.cpp's MLA modes and
    its chunked attention (-amb) drift widely from mainline."""
    phases = llama_cpp_compute_phases(
        model,
        context_tokens=context_tokens,
        sequences=sequences,
        n_ubatch=n_ubatch,
        flash_attention=flash_attention,
        mla_layout=mla_layout,
        holds_output=holds_output,
    )
    return int(LLAMA_CPP_COMPUTE_SLACK * max(phases.values()))


def llama_cpp_output_buffer_bytes(model: ModelSpec, sequences: int = 1) -> int:
    """Host output buffer: n_vocab x n_outputs x 4 with n_outputs = n_seq_max at start-up
    (llama_context::output_reserve(n_seq_max)); excludes embeddings output."""
    return model.vocab_size * sequences * F32_BYTES


def vllm_activation_peak_bytes(
    model: ModelSpec,
    *,
    max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS,
    max_num_seqs: int = VLLM_MAX_NUM_SEQS,
) -> int:
    """vLLM's "torch peak memory increase" while profiling (fitted, see module constants).

    base + max(sampler: 14.4 B x max_num_seqs x vocab, forward: 8 B x tokens x n_ff).
    The sampler term is the same on every tensor-parallel rank (full-vocab logits).
    """
    sampler = VLLM_SAMPLER_BYTES_PER_SEQ_VOCAB * max_num_seqs * model.vocab_size
    forward = VLLM_FORWARD_BYTES_PER_TOKEN_FF * max_num_batched_tokens * _ffn_width(model)
    return VLLM_ACTIVATION_BASE_BYTES + int(max(sampler, forward))


def vllm_non_torch_bytes(tensor_parallel: int = 1) -> int:
    """Non-torch memory at start-up: 0.25 GiB at TP1, 2.07 GiB once NCCL and the custom
    all-reduce buffers exist (TP >= 2); medians of vllm_memory.csv v0.19 rows."""
    return VLLM_NON_TORCH_TP1_BYTES if tensor_parallel <= 1 else VLLM_NON_TORCH_TP_BYTES


def engine_overhead(
    model: ModelSpec,
    *,
    engine: str,
    context_tokens: int,
    sequences: int = 1,
    n_ubatch: int = 512,
    flash_attention: bool = True,
    max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS,
    max_num_seqs: int = VLLM_MAX_NUM_SEQS,
    tensor_parallel: int = 1,
    mla_layout: str = "latent",
) -> Overhead:
    """Per-device memory an engine needs besides weights and KV cache.

    llama.cpp / Ollama / MLX: compute buffer + output buffer (the driver context is in the
    1 GiB device margin of usable_bytes_per_device). vLLM / SGLang / TensorRT-LLM:
    activation peak + non-torch; CUDA graphs are reported outside the budget (vLLM v0.19
    captures them after sizing the KV cache, from the 1 - utilization headroom).
    """
    if llama_family(engine):
        compute = llama_cpp_compute_buffer_bytes(
            model,
            context_tokens=context_tokens,
            sequences=sequences,
            n_ubatch=n_ubatch,
            flash_attention=flash_attention,
            mla_layout=mla_layout,
        )
        output = llama_cpp_output_buffer_bytes(model, sequences)
        parts = {"compute_buffer": compute, "output_buffer": output}
        return Overhead(engine, compute + output, parts, 0, ())
    activation = vllm_activation_peak_bytes(
        model, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs
    )
    non_torch = vllm_non_torch_bytes(tensor_parallel)
    parts = {
        "activation_peak": activation,
        "non_torch": non_torch,
        "cuda_graphs": VLLM_CUDA_GRAPH_BYTES,
    }
    notes = ("CUDA graphs are captured after the KV cache is sized (not in total_bytes)",)
    return Overhead(engine, activation + non_torch, parts, VLLM_CUDA_GRAPH_BYTES, notes)


def apple_gpu_working_set_bytes(ram_bytes: int) -> int:
    """Default Metal recommendedMaxWorkingSetSize: 2/3 of RAM up to 36 GiB, 3/4 above.

    Sources: gpustack issue #1375 (75% of RAM), exo PR #1672 (10.67 GB of 16 GB = 2/3).
    Newer macOS may allow more (107.52 GiB of 128 GiB measured, antirez/ds4 PR #893);
    the user can raise it with `sysctl iogpu.wired_limit_mb`.
    """
    fraction = 2 / 3 if ram_bytes <= 36 * GIB else 3 / 4
    return int(ram_bytes * fraction)


# amdgpu's default GTT limit ("gttsize: ... The default is -1 (Use 1/2 RAM, minimum value
# is 3GB)", kernel docs, Documentation/gpu/amdgpu/module-parameters); TTM's pages_limit
# defaults to the same half, and ROCm's Strix Halo guide says "By default, the GTT limit
# is set to approximately 50% of total system RAM".
AMDGPU_GTT_DEFAULT_FRACTION = 0.5
AMDGPU_GTT_MIN_BYTES = 3 * GIB


def amdgpu_gtt_default_bytes(os_ram_bytes: int) -> int:
    """Memory an AMD APU's GPU (Strix Halo, Radeon 8060S) may map for engines by default on
    Linux: the GTT limit, max(3 GiB, 1/2 x the RAM the OS sees).

    The OS sees the installed RAM less the BIOS VRAM carve-out ("UMA frame buffer") and
    firmware reservations: 125.65 GiB on a 128 GB Strix Halo with AMD's recommended
    0.5 GB carve-out, so 62.82 GiB (amd-ttm's "16469033 pages (62.82 GB)" in ROCm's
    Strix Halo system optimization guide). Excludes the carve-out itself (0.5 GB by
    AMD's recommendation; a larger one is taken from the OS's RAM). Raised by
    `ttm.pages_limit` (4 KiB pages; `amd-ttm --set <GB>`) or, on older kernels,
    `amdgpu.gttsize` (MiB), or by a larger BIOS carve-out.
    """
    return max(AMDGPU_GTT_MIN_BYTES, int(os_ram_bytes * AMDGPU_GTT_DEFAULT_FRACTION))


def usable_bytes_per_device(
    *,
    engine: str,
    total_bytes: int,
    unified_memory: bool = False,
    gpu_memory_utilization: float | None = None,
) -> int:
    """Memory one device offers the engine.

    Unified memory (Apple): apple_gpu_working_set_bytes(RAM), then the engine rule.
    The servers: their memory share (estimator.engines) x total: vLLM
    gpu_memory_utilization (default 0.9), SGLang mem_fraction_static (~0.88), TensorRT-LLM
    0.9 (its fraction applies to memory free after the weights; the caller compares
    weights + KV against this). llama.cpp / Ollama / MLX: total minus llama.cpp's 1 GiB
    per-device fit margin.
    """
    device = apple_gpu_working_set_bytes(total_bytes) if unified_memory else total_bytes
    share = engine_capability(engine).memory_share
    if share is None:
        return max(0, device - LLAMA_CPP_DEVICE_MARGIN_BYTES)
    return int(device * (gpu_memory_utilization or share))


def physical_bytes_per_device(*, total_bytes: int, unified_memory: bool = False) -> int:
    """The most of one device any engine can be given: the device's total; on Apple's
    unified memory the largest wired limit, one MiB below the RAM ("The wired limit should
    remain strictly less than the total memory size", mlx.core.set_wired_limit; raised with
    `sudo sysctl iogpu.wired_limit_mb=<MB>`). macOS and other programs then get what is
    left of the RAM, which is theirs to judge."""
    if unified_memory:
        return max(0, (total_bytes // MIB - 1) * MIB)
    return total_bytes


def max_memory_share(engine: str, gpu_memory_utilization: float | None = None) -> float | None:
    """The largest memory share a server may be given: its raised share (0.95,
    estimator.engines.RAISED_MEMORY_SHARE) or the request's own if larger; the share it
    has when it has no raised one (TensorRT-LLM); None for the llama family."""
    capability = engine_capability(engine)
    if capability.memory_share is None:
        return None
    share = gpu_memory_utilization or capability.memory_share
    return max(share, capability.raised_memory_share or share)


def max_usable_bytes_per_device(
    *,
    engine: str,
    total_bytes: int,
    unified_memory: bool = False,
    gpu_memory_utilization: float | None = None,
) -> int:
    """The most one device can give the engine with its start settings (start_settings):
    physical_bytes_per_device for the llama family (llama.cpp `--fit off` drops the 1 GiB
    margin; Apple's raised wired limit), physical x max_memory_share for the servers. A
    need above it does not fit (fit_verdict)."""
    physical = physical_bytes_per_device(total_bytes=total_bytes, unified_memory=unified_memory)
    share = max_memory_share(engine, gpu_memory_utilization)
    return physical if share is None else int(physical * share)


@dataclass(frozen=True)
class StartSettings:
    """What makes a setup within the engine's default margin start: engine flags (as
    separate command-line words), the server memory share they set, and Apple's raised
    wired limit in MB (`sudo sysctl iogpu.wired_limit_mb=N`, not an engine flag)."""

    flags: tuple[str, ...] = ()
    memory_share: float | None = None
    wired_limit_mb: int | None = None


def next_memory_share(need_bytes: int, device_bytes: int, cap: float) -> float:
    """The first 0.01 step above need / device, at most `cap`:
    min(cap, (floor(100 x need / device) + 1) / 100). 0.93 x a 24 GiB card
    (23,965,917,511 B of 25,769,803,776) -> floor(92.99...) + 1 = 93 -> 0.93."""
    step = (100 * need_bytes) // max(1, device_bytes) + 1
    return min(cap, step / 100)


def start_settings(
    *,
    engine: str,
    need_bytes: int,
    total_bytes: int,
    unified_memory: bool = False,
    gpu_memory_utilization: float | None = None,
    context_tokens: int = 0,
) -> StartSettings:
    """The settings that start a setup whose need is above the default budget
    (usable_bytes_per_device) and within max_usable_bytes_per_device; empty otherwise.

    Apple (unified_memory): when the working set (apple_gpu_working_set_bytes) is too small
    even at the engine's largest share, wired_limit_mb = min(RAM MiB - 1, ceil(need + 1 GiB
    margin) MiB) for the llama family, ceil(need / default share) MiB for the servers; the
    device D is then that limit, else the working set (elsewhere D = total).
    llama.cpp: `--fit off` and an explicit `-c` (context x sequences) when need > D - 1 GiB:
    "--fit [on|off]: whether to adjust unset arguments to fit in device memory", whose
    target keeps 1024 MiB free per device (common/arg.cpp); with fit off and no -c it would
    load the model's full training context. Ollama and MLX have no such flag.
    Servers: the memory share flag at next_memory_share(need, D, max_memory_share) when
    need > D x the current share.
    """
    usable = usable_bytes_per_device(
        engine=engine,
        total_bytes=total_bytes,
        unified_memory=unified_memory,
        gpu_memory_utilization=gpu_memory_utilization,
    )
    top = max_usable_bytes_per_device(
        engine=engine,
        total_bytes=total_bytes,
        unified_memory=unified_memory,
        gpu_memory_utilization=gpu_memory_utilization,
    )
    if need_bytes <= usable or need_bytes > top:
        return StartSettings()
    capability = engine_capability(engine)
    share = gpu_memory_utilization or capability.memory_share
    cap = max_memory_share(engine, gpu_memory_utilization) or 1.0
    device, wired = _start_device(need_bytes, total_bytes, unified_memory, share, cap)
    if share is None:
        fit_off = engine == "llama.cpp" and need_bytes > device - LLAMA_CPP_DEVICE_MARGIN_BYTES
        flags = ("--fit", "off", "-c", str(context_tokens)) if fit_off else ()
        return StartSettings(flags, None, wired)
    if need_bytes <= int(device * share):
        return StartSettings((), None, wired)
    raised = next_memory_share(need_bytes, device, cap)
    return StartSettings((capability.flags.memory_share, f"{raised:g}"), raised, wired)


def _start_device(
    need: int, total: int, apple: bool, share: float | None, cap: float
) -> tuple[int, int | None]:
    """(device bytes the start settings work in, Apple's raised wired limit in MB or None):
    see start_settings."""
    if not apple:
        return total, None
    working_set = apple_gpu_working_set_bytes(total)
    if need <= int(working_set * cap):
        return working_set, None
    wanted = need + LLAMA_CPP_DEVICE_MARGIN_BYTES if share is None else int(need / share)
    ram_mb = physical_bytes_per_device(total_bytes=total, unified_memory=True) // MIB
    wired = min(ram_mb, -(-wanted // MIB))
    return wired * MIB, wired


def vllm_kv_budget_bytes(
    *, usable_bytes: int, weights_bytes: int, activation_bytes: int, non_torch_bytes: int
) -> int:
    """vLLM's "Available KV cache memory": utilization x total - (weights + activation peak
    + non-torch), per rank (vllm/v1/worker/gpu_worker.py determine_available_memory)."""
    return max(0, usable_bytes - weights_bytes - activation_bytes - non_torch_bytes)


def fit_verdict(
    per_device_bytes: int, usable_bytes_per_device: int, max_usable_bytes: int | None = None
) -> Fit:
    """The verdict of a per-device need against the engine's default budget (`usable`,
    usable_bytes_per_device) and the most the engine can be given (`max_usable`,
    max_usable_bytes_per_device; None: usable, as for fine-tuning).

    does_not_fit: need > max_usable. comfortable: usable - need >= 8% of usable. tight:
    otherwise, which includes need > usable (within_default_margin: the engine starts
    only with start_settings). margin_bytes = max_usable - usable.
    24 GiB card, llama.cpp (usable 23 GiB, max 24 GiB): need 23.5 GiB is tight within the
    margin, 24 GiB + 1 MiB does not fit, 21 GiB is comfortable (2 GiB >= 0.08 x 23 GiB).
    """
    limit = usable_bytes_per_device if max_usable_bytes is None else max_usable_bytes
    limit = max(limit, usable_bytes_per_device)
    reserve = usable_bytes_per_device - per_device_bytes
    usable = max(1, usable_bytes_per_device)
    fraction = reserve / usable
    if per_device_bytes > limit:
        verdict = "does_not_fit"
    elif fraction >= COMFORTABLE_RESERVE_FRACTION:
        verdict = "comfortable"
    else:
        verdict = "tight"
    within = reserve < 0 and verdict != "does_not_fit"
    return Fit(
        verdict,
        reserve,
        fraction,
        per_device_bytes / usable,
        limit - usable_bytes_per_device,
        within,
    )


def cpu_offload_gib_per_device(offloaded_bytes: int, devices: int) -> int:
    """vLLM/SGLang --cpu-offload-gb: "the space in GiB to offload to CPU, per GPU" (vLLM
    engine arguments), so ceil(offloaded bytes / (devices x 2^30)); 0 without offload."""
    if offloaded_bytes <= 0:
        return 0
    return -(-offloaded_bytes // (max(1, devices) * GIB))
