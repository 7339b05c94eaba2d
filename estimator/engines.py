"""The engines the estimator sizes and what each one can do: one table, ENGINE_TABLE.

Every engine rule that is not arithmetic reads it: the request checks (estimator.api.parse),
the KV and memory rules (estimator.kv, estimator.memory), "make it fit"
(estimator.api.recommend), the launch commands (estimator.launch), the configurator's form
and API schema, and the catalog's support matrix. Which vendor and architecture a backend
runs on stays catalog data (catalog/data/engine_support.json); this table says which
backends an engine has at all.

Families, by how an engine holds a model:
- "llama": llama.cpp, Ollama (llama.cpp's runner) and MLX. One cache of cells for all
  sequences in ggml cache types (q8_0, q4_0); several devices split the layers (-ts, no
  tensor parallelism); offload moves whole layers with their KV cache; multimodal towers
  ship as a separate mmproj file (not sized); prefill runs on int8 matmuls.
- "server": vLLM, SGLang and TensorRT-LLM. A paged KV block pool in a share of each
  device's memory, an fp8 cache, tensor parallelism over the devices, offload of weights
  only (--cpu-offload-gb), and the batched serving point.

Flags and settings as the engines document them:
- llama.cpp, tools/server/README.md: ``-c``, ``-np``, ``-ngl``, ``-ctk``/``-ctv`` (f32, f16,
  bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1), ``-ts/--tensor-split``, ``--cpu-moe``,
  ``--n-cpu-moe``.
- Ollama, docs/faq.md and docs/modelfile.md: OLLAMA_CONTEXT_LENGTH, OLLAMA_NUM_PARALLEL,
  OLLAMA_KV_CACHE_TYPE (f16, q8_0, q4_0 only), ``PARAMETER num_gpu``; docs/gpu: CUDA,
  ROCm, Metal, Vulkan.
- vLLM, docs.vllm.ai/en/stable/configuration/engine_args/: ``--max-model-len``,
  ``--tensor-parallel-size``, ``--kv-cache-dtype`` (auto = model dtype; fp8),
  ``--gpu-memory-utilization``, ``--max-num-seqs``, ``--cpu-offload-gb``. TPU: vllm-tpu;
  Ascend: vllm-ascend; Gaudi: vllm-gaudi (out-of-tree platform plugins).
- SGLang, docs/advanced_features/server_arguments.md: ``--context-length``, ``--tp``,
  ``--kv-cache-dtype fp8_e4m3``, ``--mem-fraction-static``, ``--max-running-requests``,
  ``--cpu-offload-gb``, ``--device`` (cuda, xpu, hpu, npu, cpu).
- TensorRT-LLM, commands/trtllm-serve: ``--tp_size``, ``--max_seq_len``,
  ``--max_batch_size``, ``--kv_cache_free_gpu_memory_fraction``; an fp8 cache is
  ``KvCacheConfig(dtype='fp8')`` in ``--extra_llm_api_options``.
- mlx-lm, mlx_lm/server.py: ``--max-kv-size``, ``--kv-bits {4,8}``,
  ``--decode-concurrency``.
"""

from __future__ import annotations

from dataclasses import dataclass

# The cache types a request's workload.kv_cache_dtype names, across engines (each engine
# offers its own subset: EngineCapability.kv_cache_types).
KV_DTYPES = ("f16", "bf16", "fp8", "q8_0", "q4_0", "f32")
UNQUANTIZED_KV = ("f32", "f16", "bf16")
# llama.cpp's -ngl takes a layer count; any number above the model's layers means "all".
ALL_LAYERS = 999
# The memory share "make it fit" offers vLLM and SGLang: the rest of the device stays for
# the CUDA context, NCCL and the CUDA graphs captured after the KV cache.
RAISED_MEMORY_SHARE = 0.95


@dataclass(frozen=True)
class LaunchFlags:
    """How an engine's command spells the sized figures (a flag, or an environment or
    Modelfile setting for Ollama); "" where it has no such setting."""

    context: str = ""
    sequences: str = ""
    tensor_parallel: str = ""
    memory_share: str = ""
    kv_cache: tuple[str, ...] = ()
    gpu_layers: str = ""  # layers kept on the GPUs (llama.cpp -ngl)
    cpu_offload: str = ""  # weights in host memory, GiB per device


@dataclass(frozen=True)
class EngineCapability:
    """One engine: its names, family, the weights and KV caches it loads, its backends,
    its memory share and how its command spells the sized figures.

    kv_cache_types: the cache types its command offers (workload.kv_cache_dtype names and
    llama.cpp's -ctk names); kv_cli: how its command spells a type, where that differs from
    the engine's default (absent: no flag, the model's dtype).
    backends: those engine.backend accepts; launch_backends: those the launch command
    covers (catalog/data/engine_support.json names the hardware of each).
    memory_share: the share of each device the engine takes by default (None: what it
    needs, less llama.cpp's 1 GiB margin); raised_memory_share: the larger share "make it
    fit" may offer (None: none).
    offload: the estimator Offload fields the engine has a setting for."""

    name: str  # the estimator's engine.name
    label: str  # how pages name it
    slug: str  # the catalog's InferenceEngine slug
    family: str  # "llama" | "server"
    weight_formats: tuple[str, ...]  # "gguf", "hf", "mlx"; the first is its own
    hf_dtypes: tuple[str, ...] | None  # the HF formats it loads; None: every one
    kv_cache_types: tuple[str, ...]
    kv_cli: tuple[tuple[str, str], ...]
    backends: tuple[str, ...]
    launch_backends: tuple[str, ...]
    vendor_backends: tuple[tuple[str, str], ...]  # estimator vendor -> default backend
    default_backend: str  # for a vendor vendor_backends does not name
    memory_share: float | None
    raised_memory_share: float | None
    flags: LaunchFlags
    offload: tuple[str, ...]
    plugins: tuple[tuple[str, str], ...] = ()  # backend -> out-of-tree package

    def backend_for(self, vendor: str) -> str:
        """The backend the engine takes on `vendor`'s hardware when none is named."""
        return dict(self.vendor_backends).get(vendor, self.default_backend)


LLAMA_KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl")
# cann: Huawei Ascend; musa: Moore Threads; tpu: Google TPU; hpu: Intel Gaudi; xpu: Intel
# GPUs under vLLM/SGLang; mlu: Cambricon; maca: MetaX; kunlun: Kunlunxin. Backends without
# published measurements fall back to the engine's generic speed factors, and the result
# says so in `warnings`.
GGML_BACKENDS = ("cuda", "rocm", "metal", "vulkan", "sycl", "cpu", "cann", "musa")
SERVER_BACKENDS = (
    *("cuda", "rocm", "cpu", "cann", "musa", "metal"),
    *("tpu", "hpu", "xpu", "mlu", "maca", "kunlun"),
)
GGML_VENDOR_BACKENDS = (
    ("nvidia", "cuda"),
    ("amd", "rocm"),
    ("apple", "metal"),
    ("intel", "sycl"),
    ("cpu", "cpu"),
)
SERVER_KV_TYPES = ("f16", "bf16", "fp8", "f32")

ENGINE_TABLE: tuple[EngineCapability, ...] = (
    EngineCapability(
        name="llama.cpp",
        label="llama.cpp",
        slug="llama-cpp",
        family="llama",
        weight_formats=("gguf",),
        hf_dtypes=(),
        kv_cache_types=LLAMA_KV_TYPES,
        kv_cli=tuple((kv, kv) for kv in LLAMA_KV_TYPES),
        backends=GGML_BACKENDS,
        launch_backends=("cuda", "rocm", "metal", "vulkan", "sycl", "cann", "musa", "cpu"),
        vendor_backends=GGML_VENDOR_BACKENDS,
        default_backend="vulkan",
        memory_share=None,
        raised_memory_share=None,
        flags=LaunchFlags(
            context="-c", sequences="-np", kv_cache=("-ctk", "-ctv"), gpu_layers="-ngl"
        ),
        offload=("fraction", "layers", "moe_experts", "moe_layers"),
    ),
    EngineCapability(
        name="ollama",
        label="Ollama",
        slug="ollama",
        family="llama",
        weight_formats=("gguf",),
        hf_dtypes=(),
        kv_cache_types=("f16", "q8_0", "q4_0"),
        kv_cli=(("f16", "f16"), ("q8_0", "q8_0"), ("q4_0", "q4_0")),
        backends=GGML_BACKENDS,
        launch_backends=("cuda", "rocm", "metal", "vulkan", "cpu"),
        vendor_backends=GGML_VENDOR_BACKENDS,
        default_backend="vulkan",
        memory_share=None,
        raised_memory_share=None,
        flags=LaunchFlags(
            context="OLLAMA_CONTEXT_LENGTH",
            sequences="OLLAMA_NUM_PARALLEL",
            kv_cache=("OLLAMA_KV_CACHE_TYPE",),
            gpu_layers="num_gpu",
        ),
        offload=("fraction", "layers"),
    ),
    EngineCapability(
        name="vllm",
        label="vLLM",
        slug="vllm",
        family="server",
        weight_formats=("hf",),
        hf_dtypes=None,
        kv_cache_types=SERVER_KV_TYPES,
        kv_cli=(("fp8", "fp8"),),
        backends=SERVER_BACKENDS,
        launch_backends=(
            *("cuda", "rocm", "tpu", "cann", "hpu", "xpu", "cpu"),
            *("metal", "mlu", "maca", "kunlun", "musa"),
        ),
        vendor_backends=(("amd", "rocm"),),
        default_backend="cuda",
        memory_share=0.9,  # --gpu-memory-utilization default
        raised_memory_share=RAISED_MEMORY_SHARE,
        flags=LaunchFlags(
            context="--max-model-len",
            sequences="--max-num-seqs",
            tensor_parallel="--tensor-parallel-size",
            memory_share="--gpu-memory-utilization",
            kv_cache=("--kv-cache-dtype",),
            cpu_offload="--cpu-offload-gb",
        ),
        offload=("fraction", "moe_experts"),
        # engine_support.json "package"; TPU: docs.vllm.ai/projects/tpu (uv pip install).
        plugins=(
            *(("tpu", "vllm-tpu"), ("cann", "vllm-ascend"), ("hpu", "vllm-gaudi")),
            *(("metal", "vllm-metal"), ("mlu", "vllm-mlu"), ("maca", "vllm-metax")),
            *(("kunlun", "vllm-kunlun"), ("musa", "vllm-musa")),
        ),
    ),
    EngineCapability(
        name="sglang",
        label="SGLang",
        slug="sglang",
        family="server",
        weight_formats=("hf",),
        hf_dtypes=None,
        kv_cache_types=SERVER_KV_TYPES,
        kv_cli=(("fp8", "fp8_e4m3"),),
        backends=SERVER_BACKENDS,
        launch_backends=("cuda", "rocm", "cann", "hpu", "xpu", "cpu", "metal", "musa"),
        vendor_backends=(("amd", "rocm"),),
        default_backend="cuda",
        memory_share=0.88,  # mem_fraction_static: ~0.88 on 80 GB GPUs (server_args.py)
        raised_memory_share=RAISED_MEMORY_SHARE,
        flags=LaunchFlags(
            context="--context-length",
            sequences="--max-running-requests",
            tensor_parallel="--tp",
            memory_share="--mem-fraction-static",
            kv_cache=("--kv-cache-dtype",),
            cpu_offload="--cpu-offload-gb",
        ),
        offload=("fraction",),
    ),
    EngineCapability(
        name="tensorrt-llm",
        label="TensorRT-LLM",
        slug="tensorrt-llm",
        family="server",
        weight_formats=("hf",),
        # Its quantization recipes: FP8, NVFP4, AWQ, GPTQ (and MXFP4 checkpoints).
        hf_dtypes=("bf16", "fp16", "fp8", "awq-int4", "gptq-int4", "mxfp4", "nvfp4"),
        kv_cache_types=("f16", "bf16", "fp8"),
        kv_cli=(("fp8", "fp8"),),
        backends=("cuda",),
        launch_backends=("cuda",),
        vendor_backends=(),
        default_backend="cuda",
        memory_share=0.9,  # KvCacheConfig.free_gpu_memory_fraction default
        raised_memory_share=None,
        flags=LaunchFlags(
            context="--max_seq_len",
            sequences="--max_batch_size",
            tensor_parallel="--tp_size",
            memory_share="--kv_cache_free_gpu_memory_fraction",
        ),
        offload=(),
    ),
    EngineCapability(
        name="mlx",
        label="MLX",
        slug="mlx",
        family="llama",
        weight_formats=("mlx", "hf"),
        hf_dtypes=("bf16", "fp16"),
        kv_cache_types=("f16", "bf16", "q8_0", "q4_0"),
        kv_cli=(("q8_0", "8"), ("q4_0", "4")),  # --kv-bits, group 64
        backends=("metal", "cuda", "cpu"),
        # Its CUDA build is experimental (engine_support.json): the page offers Apple only.
        launch_backends=("metal",),
        vendor_backends=(),
        default_backend="metal",
        memory_share=None,
        raised_memory_share=None,
        flags=LaunchFlags(
            context="--max-kv-size", sequences="--decode-concurrency", kv_cache=("--kv-bits",)
        ),
        offload=(),  # unified memory: nothing to offload to
    ),
)


@dataclass(frozen=True)
class QuantHardware:
    """The hardware whose kernels run one Hugging Face weights format: per backend, the
    architectures (the catalog's names, matched on their lower-case start) that run it; a
    backend not named does not run it, nor does a card whose architecture is not known."""

    dtype: str
    architectures: tuple[tuple[str, tuple[str, ...]], ...]
    source: str


# Formats that need particular hardware; every other format runs wherever its engine does.
QUANT_HARDWARE: tuple[QuantHardware, ...] = (
    QuantHardware(
        dtype="nvfp4",
        # FP4 tensor cores: Blackwell only (compute capability 10.x data centre, 12.x
        # GeForce RTX 50 / RTX PRO and GB10); Hopper's smallest format is FP8.
        architectures=(("cuda", ("blackwell",)),),
        source=(
            "NVIDIA Technical Blog, 'Introducing NVFP4 for Efficient and Accurate "
            "Low-Precision Inference' (2025-06): NVFP4 is one of the 4-bit formats of "
            "Blackwell's fifth-generation Tensor Cores; vLLM docs, features/quantization "
            "'Supported Hardware' (no FP4 column before Blackwell)"
        ),
    ),
    QuantHardware(
        dtype="mxfp4",
        architectures=(
            ("cuda", ("ampere", "ada", "hopper", "blackwell")),
            ("rocm", ("cdna 3", "cdna 4", "rdna 4")),
        ),
        source=(
            "vllm-project/recipes OpenAI/GPT-OSS.md: gpt-oss (MXFP4 experts) runs on H100, "
            "H200, B200, MI300X, MI325X, MI355X and Radeon AI PRO R9700, and on Ampere "
            "with the Marlin MXFP4 MoE kernel (SM 8.0 and later)"
        ),
    ),
)
_QUANT_HARDWARE = {rule.dtype: rule for rule in QUANT_HARDWARE}


def quant_backends(dtype: str) -> tuple[str, ...] | None:
    """The backends that run HF format `dtype`; None: every backend its engine has."""
    rule = _QUANT_HARDWARE.get(dtype)
    return None if rule is None else tuple(backend for backend, _ in rule.architectures)


def runs_on_hardware(dtype: str, backend: str, architecture: str | None) -> bool:
    """Whether HF format `dtype` runs on `backend` on a card of `architecture` (the
    catalog's name, "Blackwell", "CDNA 3"): NVFP4 on NVIDIA Blackwell only, MXFP4 on
    NVIDIA Ampere or later and AMD CDNA 3/4 and RDNA 4 (QUANT_HARDWARE); any other
    format everywhere. An unknown architecture runs only the formats without a rule."""
    rule = _QUANT_HARDWARE.get(dtype)
    if rule is None:
        return True
    allowed = dict(rule.architectures).get(backend)
    arch = (architecture or "").strip().lower()
    if not allowed or not arch:
        return False
    return arch.startswith(allowed)


_BY_NAME = {capability.name: capability for capability in ENGINE_TABLE}
ENGINES = tuple(_BY_NAME)
BACKENDS = tuple(dict.fromkeys(b for capability in ENGINE_TABLE for b in capability.backends))


def engine_capability(name: str) -> EngineCapability:
    """The table's row for `name`; ValueError for an engine the estimator does not size."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; expected one of {sorted(ENGINES)}") from None


def engine_label(name: str) -> str:
    """How pages name the engine ("vLLM"); `name` itself for one not in the table (a
    form's input before it is checked)."""
    capability = _BY_NAME.get(name)
    return capability.label if capability else name


def engine_by_slug(slug: str) -> EngineCapability | None:
    """The row whose catalog slug is `slug` ("llama-cpp"), None for an engine not here."""
    return next((c for c in ENGINE_TABLE if c.slug == slug), None)


def llama_family(name: str) -> bool:
    """Whether `name` holds a model the llama.cpp way (the module docstring's families)."""
    return engine_capability(name).family == "llama"


def runs_gguf(name: str) -> bool:
    """Whether the engine's own weights format is GGUF (llama.cpp, Ollama)."""
    return engine_capability(name).weight_formats[0] == "gguf"


def loads_hf(name: str, dtype: str) -> bool:
    """Whether the engine loads a Hugging Face checkpoint in `dtype`."""
    capability = engine_capability(name)
    allowed = capability.hf_dtypes
    return "hf" in capability.weight_formats and (allowed is None or dtype in allowed)


def quantized_kv_types(name: str) -> tuple[str, ...]:
    """The quantized caches a request may give the engine (workload.kv_cache_dtype):
    q8_0 and q4_0 for the llama family, fp8 for the servers."""
    types = engine_capability(name).kv_cache_types
    return tuple(t for t in types if t in KV_DTYPES and t not in UNQUANTIZED_KV)


def kv_cli_value(name: str, kv: str) -> str | None:
    """How the engine's command spells cache type `kv`; None: the engine's default."""
    return dict(engine_capability(name).kv_cli).get(kv)


def default_memory_share(name: str) -> float:
    """The share of each device the engine takes by default: vLLM 0.9, SGLang 0.88,
    TensorRT-LLM 0.9; 1.0 for the llama family (it takes what it needs)."""
    share = engine_capability(name).memory_share
    return 1.0 if share is None else share


def llama_gpu_layers(n_layers: int, offloaded_layers: int) -> int:
    """llama.cpp's -ngl with the first `offloaded_layers` of `n_layers` in host memory:
    n_layers + 1 - offloaded_layers, as the output layer is one of -ngl's slots
    (src/llama-model.cpp: layers below i_gpu_start = n_layer + 1 - ngl run on the CPU, and
    the output head stays on the GPU as the estimator sizes it); ALL_LAYERS without offload.
    40 layers, 1 in host memory: -ngl 40 (layers 1..39 and the output on the GPU)."""
    if offloaded_layers <= 0:
        return ALL_LAYERS
    return n_layers + 1 - offloaded_layers


def server_tensor_parallel(tensor_parallel: int, devices: int) -> int:
    """The devices a server engine splits over: the request's tensor parallelism, or all
    of them for a request sized with TP 1 (a llama.cpp layer split)."""
    return tensor_parallel if tensor_parallel > 1 else devices
