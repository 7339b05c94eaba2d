"""Launch commands that load exactly what the page sized, or the reason an engine cannot.

Every number in a command comes from the estimator's request or result (context, devices,
tensor parallelism, KV type, memory share, offloaded layers and bytes); the weights format
decides which repository or file each engine loads. Flags as the engines document them:

- llama.cpp, tools/server/README.md: ``-hf <repo>[:quant]``, ``-m``, ``-c``, ``-np``,
  ``-ngl``, ``-fa on``, ``-ctk``/``-ctv`` (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0,
  q5_1), ``-ts/--tensor-split``, ``-cmoe/--cpu-moe``, ``-ncmoe/--n-cpu-moe``.
- Ollama, docs/faq.md and docs/modelfile.md: OLLAMA_CONTEXT_LENGTH, OLLAMA_NUM_PARALLEL,
  OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE (f16, q8_0, q4_0 only), ``FROM
  hf.co/<repo>:<quant>``, ``PARAMETER num_ctx`` / ``num_gpu``; docs/gpu: CUDA, ROCm, Metal,
  Vulkan.
- vLLM, docs.vllm.ai/en/stable/configuration/engine_args/: ``--max-model-len``,
  ``--tensor-parallel-size``, ``--dtype``, ``--quantization`` ("If None, we first check the
  quantization_config attribute in the model config file", so a quantized repo needs no
  flag), ``--kv-cache-dtype`` (auto = model dtype; fp8; Intel Gaudi uses fp8_inc),
  ``--gpu-memory-utilization``, ``--max-num-seqs``, ``--cpu-offload-gb`` ("The space in GiB
  to offload to CPU, per GPU"), ``--cpu-offload-params``. GGUF, features/quantization/gguf:
  "highly experimental", "only supports loading single-file GGUF models", moved to the
  vllm-gguf-plugin. TPU: ``uv pip install vllm-tpu`` (docs.vllm.ai/projects/tpu); Ascend:
  the vllm-ascend plugin; Gaudi: the vllm-gaudi plugin (docs.vllm.ai/projects/gaudi).
- SGLang, docs/advanced_features/server_arguments.md: ``--model-path``,
  ``--context-length``, ``--tp``, ``--dtype``, ``--quantization fp8`` ("on a fp16
  checkpoint or directly load a fp8 checkpoint without specifying any arguments"),
  ``--kv-cache-dtype fp8_e4m3``, ``--mem-fraction-static``, ``--max-running-requests``,
  ``--cpu-offload-gb``, ``--device`` (cuda, xpu, hpu, npu, cpu). ``--load-format`` lists
  gguf but the docs give no GGUF workflow (sgl-project/sglang#4894: a .gguf fails to load).
- TensorRT-LLM, commands/trtllm-serve: ``trtllm-serve MODEL --backend pytorch --tp_size
  --max_seq_len --max_batch_size --kv_cache_free_gpu_memory_fraction
  --extra_llm_api_options``; features/quantization: ``KvCacheConfig(dtype='fp8')``,
  pre-quantized checkpoints from NVIDIA Model Optimizer.
- mlx-lm, mlx_lm/server.py: ``mlx_lm.server --model --max-kv-size --kv-bits {4,8}
  --max-prompt-tokens --decode-concurrency``; ``--max-kv-size`` cannot be combined with
  ``--kv-bits``. mlx-lm README: ``mlx_lm.convert --hf-path ... -q --q-bits``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from estimator.api.schema import ENGINES, LLAMA_KV_TYPES
from estimator.memory import (
    SGLANG_MEM_FRACTION_STATIC,
    TRTLLM_FREE_GPU_MEMORY_FRACTION,
    VLLM_GPU_MEMORY_UTILIZATION,
    cpu_offload_gib_per_device,
)

__all__ = ["ENGINES", "LaunchCommand", "LaunchConfig", "launch_commands", "launch_config"]

ENGINE_NAMES = {
    "llama.cpp": "llama.cpp",
    "ollama": "Ollama",
    "vllm": "vLLM",
    "sglang": "SGLang",
    "tensorrt-llm": "TensorRT-LLM",
    "mlx": "MLX",
}
# As catalog/data/engine_support.json (sourced per row), except MLX: its CUDA build is
# experimental there, and this page offers mlx_lm.server on Apple silicon only.
BACKENDS = {
    "llama.cpp": ("cuda", "rocm", "metal", "vulkan", "sycl", "cann", "musa", "cpu"),
    "ollama": ("cuda", "rocm", "metal", "vulkan", "cpu"),
    "vllm": (
        *("cuda", "rocm", "tpu", "cann", "hpu", "xpu", "cpu"),
        *("metal", "mlu", "maca", "kunlun", "musa"),
    ),
    "sglang": ("cuda", "rocm", "cann", "hpu", "xpu", "cpu", "metal", "musa"),
    "tensorrt-llm": ("cuda",),
    "mlx": ("metal",),
}
# Out-of-tree vLLM platform plugins (engine_support.json "package"; TPU: docs.vllm.ai).
VLLM_PLUGINS = {
    "tpu": "vllm-tpu",
    "cann": "vllm-ascend",
    "hpu": "vllm-gaudi",
    "metal": "vllm-metal",
    "mlu": "vllm-mlu",
    "maca": "vllm-metax",
    "kunlun": "vllm-kunlun",
    "musa": "vllm-musa",
}
KV_TYPES = {
    "llama.cpp": LLAMA_KV_TYPES,
    "ollama": ("f16", "q8_0", "q4_0"),
    "vllm": ("f16", "bf16", "fp8", "f32"),
    "sglang": ("f16", "bf16", "fp8", "f32"),
    "tensorrt-llm": ("f16", "bf16", "fp8"),
    "mlx": ("f16", "bf16", "q8_0", "q4_0"),
}
# MLX checkpoints (mlx-community naming: <model>-4bit); the estimator has no MLX format.
MLX_QUANTS = ("mlx-3bit", "mlx-4bit", "mlx-6bit", "mlx-8bit")
HF_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
TORCH_DTYPES = {torch: name for name, torch in HF_DTYPES.items()}
# The GGUF file type of about the same bytes per weight (catalog/data/quant_formats.csv).
SIMILAR_GGUF = {
    "fp32": "F32",
    "bf16": "BF16",
    "fp16": "F16",
    "fp8": "Q8_0",
    "w8a8": "Q8_0",
    "awq-int4": "Q4_K_M",
    "gptq-int4": "Q4_K_M",
    "nvfp4": "Q4_K_M",
    "mxfp4": "MXFP4_MOE",
}
# Placeholder repo suffix and the tools that make such a checkpoint ("" = none named).
CHECKPOINTS = {
    "bf16": ("BF16", ""),
    "fp16": ("FP16", ""),
    "fp32": ("FP32", ""),
    "fp8": ("FP8", "llm-compressor or NVIDIA Model Optimizer"),
    "w8a8": ("W8A8", "llm-compressor"),
    "awq-int4": ("AWQ", "llm-compressor/AutoAWQ"),
    "gptq-int4": ("GPTQ", "llm-compressor/GPTQModel"),
    "mxfp4": ("MXFP4", ""),
    "nvfp4": ("NVFP4", "llm-compressor or NVIDIA Model Optimizer"),
}
# llama.cpp's -ngl takes a layer count; any number above the model's layers means "all".
ALL_LAYERS = 999
SGLANG_DEVICES = {"cann": "npu", "hpu": "hpu", "xpu": "xpu", "cpu": "cpu"}
MLX_KV_BITS = {"q8_0": "8", "q4_0": "4"}


@dataclass(frozen=True)
class ServerFlags:
    """How a vLLM-like server spells the sized figures, and the memory share the estimator
    assumes when the request names none."""

    tensor_parallel: str
    context: str
    sequences: str
    memory_share: str
    memory_default: float


SERVER_FLAGS = {
    "vllm": ServerFlags(
        "--tensor-parallel-size",
        "--max-model-len",
        "--max-num-seqs",
        "--gpu-memory-utilization",
        VLLM_GPU_MEMORY_UTILIZATION,
    ),
    "sglang": ServerFlags(
        "--tp",
        "--context-length",
        "--max-running-requests",
        "--mem-fraction-static",
        SGLANG_MEM_FRACTION_STATIC,
    ),
    "tensorrt-llm": ServerFlags(
        "--tp_size",
        "--max_seq_len",
        "--max_batch_size",
        "--kv_cache_free_gpu_memory_fraction",
        TRTLLM_FREE_GPU_MEMORY_FRACTION,
    ),
}


@dataclass(frozen=True)
class LaunchConfig:
    hf_repo: str  # the original checkpoint, e.g. "zai-org/GLM-4.5-Air"
    gguf_repo: str  # a repository with GGUF files for this quant, "" when unknown
    weights_repo: str  # the catalog's repository for this exact HF/MLX format, "" if unknown
    weights_format: str  # "gguf" | "hf" | "mlx"
    quant: str  # GGUF file type ("Q4_K_M"), HF format ("awq-int4") or MLX quant
    native_dtype: str  # the original checkpoint's format: "bf16", "fp8", "mxfp4", "" unknown
    context_tokens: int
    gpus: int
    tensor_parallel: int  # devices vLLM-like engines split over (1 = not sized with TP)
    sequences: int
    kv: str
    backend: str  # cuda, rocm, metal, vulkan, sycl, cann, musa, tpu, hpu, xpu, cpu
    gpu_memory_utilization: float | None  # the request's value; None = each engine's default
    n_layers: int
    offloaded_layers: int
    offloaded_bytes: int  # all devices together
    moe_experts: bool  # every routed expert in host memory
    moe_layers: int = 0  # the routed experts of layers 0 .. N-1 in host memory (0: none)
    # the serving engines' batch cap (--max-num-seqs ...): the page's sequences, or, when
    # the page sizes fewer, the serving point's users (the most that each decode at its
    # per-user speed with a first token in time); 0: the page's sequences
    server_sequences: int = 0


@dataclass(frozen=True)
class LaunchCommand:
    engine: str
    text: str | None  # None exactly when refused
    refused: str | None
    notes: tuple[str, ...] = ()


def native_dtype(hf_config: Mapping[str, Any]) -> str:
    """The checkpoint's own format: its quantization_config.quant_method when that is fp8
    or mxfp4 (DeepSeek-V3, gpt-oss), else its torch_dtype; "" when neither says."""
    quantization = hf_config.get("quantization_config")
    method = quantization.get("quant_method") if isinstance(quantization, Mapping) else None
    if method in ("fp8", "mxfp4"):
        return str(method)
    dtype = hf_config.get("torch_dtype") or hf_config.get("dtype")
    return TORCH_DTYPES.get(dtype, "") if isinstance(dtype, str) else ""


def launch_config(
    request: Mapping[str, Any],
    result: Mapping[str, Any],
    *,
    hf_repo: str,
    gguf_repo: str,
    weights_repo: str,
    layers: tuple[int, int],
    backend: str,
    native: str | None = None,
) -> LaunchConfig:
    """The command inputs from an estimator request and its result; `layers` is
    (offloaded layers, model layers) as the estimator placed them; `native` overrides the
    checkpoint format read from the request's config.json."""
    weights, workload = request["weights"], request["workload"]
    offload = workload.get("offload") or {}
    gguf = weights["format"] == "gguf"
    return LaunchConfig(
        hf_repo=hf_repo,
        gguf_repo=gguf_repo,
        weights_repo=weights_repo,
        weights_format="gguf" if gguf else "hf",
        quant=weights["quant"] if gguf else weights["dtype"],
        native_dtype=native_dtype(request["model"]["hf_config"]) if native is None else native,
        context_tokens=workload["context_tokens"],
        gpus=request["device"]["count"],
        tensor_parallel=workload.get("tensor_parallel", 1),
        sequences=workload["concurrent_sequences"],
        kv=workload["kv_cache_dtype"],
        backend=backend,
        gpu_memory_utilization=request.get("engine", {}).get("gpu_memory_utilization"),
        n_layers=layers[1],
        offloaded_layers=layers[0],
        offloaded_bytes=result["offloaded_bytes"],
        moe_experts=bool(offload.get("moe_experts", False)),
        moe_layers=int(offload.get("moe_layers") or 0),
        server_sequences=max(
            int(workload["concurrent_sequences"]),
            int((result.get("serving") or {}).get("users") or 0),
        ),
    )


# --- what each engine can load ----------------------------------------------------------


def _gguf_only(engine: str, weights_format: str, quant: str) -> str | None:
    if weights_format == "gguf":
        return None
    name = ENGINE_NAMES[engine]
    if weights_format == "hf" and quant in SIMILAR_GGUF:
        return _(
            "%(engine)s loads GGUF files, not Hugging Face %(quant)s checkpoints; choose the "
            "GGUF quant of similar size, %(gguf)s."
        ) % {"engine": name, "quant": quant, "gguf": SIMILAR_GGUF[quant]}
    return _("%(engine)s loads GGUF files, not %(quant)s checkpoints; choose a GGUF quant.") % {
        "engine": name,
        "quant": quant,
    }


def _hf_only(engine: str, weights_format: str, quant: str) -> str | None:
    if weights_format == "hf":
        return None
    if engine == "vllm" and weights_format == "gguf":
        return _(
            "vLLM's GGUF loader is experimental, loads single-file GGUFs only and now needs "
            "the vllm-gguf-plugin; choose an HF format such as awq-int4 for vLLM."
        )
    if engine == "sglang" and weights_format == "gguf":
        return _(
            "SGLang documents no GGUF serving (its gguf load format is untested for most "
            "models); choose an HF format such as awq-int4 for SGLang."
        )
    return _(
        "%(engine)s loads Hugging Face checkpoints, not %(quant)s files; choose an HF "
        "format such as awq-int4."
    ) % {"engine": ENGINE_NAMES[engine], "quant": quant}


def _trtllm_format(engine: str, weights_format: str, quant: str) -> str | None:
    reason = _hf_only(engine, weights_format, quant)
    if reason or quant not in ("w8a8", "fp32"):
        return reason
    return _(
        "TensorRT-LLM's quantization recipes cover FP8, NVFP4, AWQ and GPTQ, and this page "
        "gives it 16-bit or those; choose bf16, fp8 or awq-int4 instead of %(quant)s."
    ) % {"quant": quant}


def _mlx_format(engine: str, weights_format: str, quant: str) -> str | None:
    if (weights_format == "hf" and quant in ("bf16", "fp16")) or weights_format == "mlx":
        return None
    return _(
        "MLX loads MLX-format safetensors (bf16/fp16 checkpoints or mlx-community quants), "
        "not %(quant)s; choose bf16 or an MLX quant."
    ) % {"quant": quant}


# (engine, weights format, quant) -> why the engine cannot load it, or None.
FORMAT_RULES: dict[str, Callable[[str, str, str], str | None]] = {
    "llama.cpp": _gguf_only,
    "ollama": _gguf_only,
    "vllm": _hf_only,
    "sglang": _hf_only,
    "tensorrt-llm": _trtllm_format,
    "mlx": _mlx_format,
}


def _backend_refusal(engine: str, quant: str, backend: str) -> str | None:
    allowed = BACKENDS[engine]
    if backend not in allowed:
        return _("%(engine)s has no %(backend)s backend; it runs on %(backends)s.") % {
            "engine": ENGINE_NAMES[engine],
            "backend": backend,
            "backends": ", ".join(allowed),
        }
    if quant == "nvfp4" and backend != "cuda":
        return _("NVFP4 weights need NVIDIA GPUs (cuda), not %(backend)s.") % {"backend": backend}
    return None


def _kv_refusal(engine: str, quant: str, kv: str) -> str | None:
    # vLLM and SGLang keep the cache in the model dtype ("auto"): f32 only for fp32 weights.
    if engine in ("vllm", "sglang") and kv == "f32" and quant != "fp32":
        return _("%(engine)s keeps an f32 KV cache only for fp32 weights.") % {
            "engine": ENGINE_NAMES[engine]
        }
    allowed = KV_TYPES[engine]
    if kv in allowed:
        return None
    return _("%(engine)s has no %(kv)s KV cache; it offers %(kvs)s.") % {
        "engine": ENGINE_NAMES[engine],
        "kv": kv,
        "kvs": ", ".join(k for k in allowed if k != "f32"),
    }


def refusal(*, engine: str, weights_format: str, quant: str, backend: str, kv: str) -> str | None:
    """Why `engine` cannot load `quant` weights on `backend` with a `kv` cache, or None.

    The one place that decides; launch_commands refuses the same combinations, plus
    offload an engine has no setting for (see _setup_refusal).
    """
    if quant in MLX_QUANTS:
        weights_format = "mlx"
    return (
        FORMAT_RULES[engine](engine, weights_format, quant)
        or _backend_refusal(engine, quant, backend)
        or _kv_refusal(engine, quant, kv)
    )


def _setup_refusal(engine: str, config: LaunchConfig) -> str | None:
    if engine == "ollama" and (config.moe_experts or config.moe_layers):
        return _("Ollama has no setting that keeps only the MoE experts in host memory.")
    if engine in ("vllm", "sglang") and config.moe_layers:
        return _(
            "%(engine)s has no setting that keeps the experts of the first layers in "
            "host memory (llama.cpp --n-cpu-moe)."
        ) % {"engine": ENGINE_NAMES[engine]}
    if engine == "tensorrt-llm" and config.offloaded_bytes:
        return _("trtllm-serve documents no weight offload to host memory.")
    return None


# --- spelling the commands ---------------------------------------------------------------


def _join(parts: list[str]) -> str:
    """One flag pair per line, continued with backslashes, as the engines' docs show them."""
    lines = [parts[0]]
    i = 1
    while i < len(parts):
        if i + 1 < len(parts) and not parts[i + 1].startswith("-"):
            lines.append(f"{parts[i]} {parts[i + 1]}")
            i += 2
        else:
            lines.append(parts[i])
            i += 1
    return " \\\n  ".join(lines)


def _heredoc(path: str, body: str) -> str:
    """A shell line that writes `body` to `path` before the command that reads it."""
    return f"cat > {path} <<'EOF'\n{body}\nEOF\n"


def _model_name(config: LaunchConfig) -> str:
    return config.hf_repo.rsplit("/", 1)[-1] or "model"


def _gguf_source(config: LaunchConfig) -> tuple[str, tuple[str, ...]]:
    """(repo:quant or placeholder file, notes)."""
    if config.gguf_repo:
        return f"{config.gguf_repo}:{config.quant}", ()
    note = _("The file name is a placeholder: no GGUF repository for %(quant)s in the catalog.")
    return f"{_model_name(config)}-{config.quant}.gguf", (note % {"quant": config.quant},)


def _backend_notes(engine: str, backend: str) -> tuple[str, ...]:
    note = None
    if engine == "vllm" and backend in VLLM_PLUGINS:
        note = _("%(backend)s: install the %(package)s plugin; the command is the same.") % {
            "backend": backend,
            "package": VLLM_PLUGINS[backend],
        }
    elif engine == "vllm" and backend != "cuda":
        note = _("%(backend)s: the same command in vLLM's %(backend)s build.") % {
            "backend": backend
        }
    elif engine == "llama.cpp" and backend not in ("cuda", "metal", "cpu"):
        note = _("Use a llama.cpp build with the %(backend)s backend.") % {"backend": backend}
    elif engine == "sglang" and backend in ("metal", "musa"):
        note = _("SGLang on %(backend)s is experimental.") % {"backend": backend}
    return (note,) if note else ()


def llama_cpp(config: LaunchConfig) -> LaunchCommand:
    """llama-server: -c is the total context of all slots (-np), so context x sequences;
    -ngl counts the layer slots kept on the GPUs, the output layer being one of them:
    llama.cpp puts layers below n_layer + 1 - ngl on the CPU (src/llama-model.cpp,
    i_gpu_start), so N layers in host memory is -ngl n_layer + 1 - N (the estimator
    offloads the first ones and keeps the output head on the GPU as well); MoE
    offload keeps every layer on the GPUs but the experts: all (--cpu-moe) or those of
    the first N layers (--n-cpu-moe N), as common/arg.cpp defines them."""
    source, notes = _gguf_source(config)
    flag = "-hf" if config.gguf_repo else "-m"
    on_gpu = config.n_layers + 1 - config.offloaded_layers
    if config.moe_experts or config.moe_layers or not config.offloaded_layers:
        on_gpu = ALL_LAYERS
    parts = [
        "llama-server",
        *(flag, shlex.quote(source)),
        *("-c", str(config.context_tokens * config.sequences)),
        *("-np", str(config.sequences)),
        *("-ngl", str(on_gpu)),
        *("-fa", "on"),
        *("-ctk", config.kv, "-ctv", config.kv),
    ]
    if config.moe_experts:
        parts.append("--cpu-moe")
    elif config.moe_layers:
        parts += ["--n-cpu-moe", str(config.moe_layers)]
    if config.gpus > 1:
        parts += ["--tensor-split", ",".join(["1"] * config.gpus)]
    notes += _backend_notes("llama.cpp", config.backend)
    return LaunchCommand("llama.cpp", _join(parts), None, notes)


def ollama(config: LaunchConfig) -> LaunchCommand:
    """The server's environment, then the model with num_ctx (and num_gpu when layers stay
    in host memory) in a Modelfile."""
    env = [
        f"OLLAMA_CONTEXT_LENGTH={config.context_tokens}",
        f"OLLAMA_NUM_PARALLEL={config.sequences}",
        "OLLAMA_FLASH_ATTENTION=1",
        f"OLLAMA_KV_CACHE_TYPE={config.kv}",
    ]
    source, notes = _gguf_source(config)
    source = f"hf.co/{source}" if config.gguf_repo else f"./{source}"
    modelfile = [f"FROM {source}", f"PARAMETER num_ctx {config.context_tokens}"]
    if config.offloaded_layers:
        modelfile.append(f"PARAMETER num_gpu {config.n_layers - config.offloaded_layers}")
    text = (
        " \\\n".join(env)
        + " ollama serve\n\n"
        + _heredoc("Modelfile", "\n".join(modelfile))
        + "ollama create local-model -f Modelfile\nollama run local-model"
    )
    return LaunchCommand("ollama", text, None, notes)


@dataclass(frozen=True)
class _Source:
    model: str
    flags: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _placeholder(config: LaunchConfig) -> _Source:
    suffix, tools = CHECKPOINTS[config.quant]
    if tools:
        note = _(
            "No %(scheme)s checkpoint in the catalog: the repository name is a placeholder; "
            "pick one on Hugging Face or quantize with %(tools)s."
        ) % {"scheme": suffix, "tools": tools}
    else:
        note = _(
            "No %(scheme)s checkpoint in the catalog: the repository name is a placeholder; "
            "pick one on Hugging Face."
        ) % {"scheme": suffix}
    return _Source(f"<org>/{_model_name(config)}-{suffix}", (), (note,))


def _server_source(config: LaunchConfig, engine: str) -> _Source:
    """The repository a vLLM-like engine loads for the sized format, and its flags. A
    quantized repo carries its quantization_config, so it needs no --quantization."""
    quant, dtype = config.quant, HF_DTYPES.get(config.quant)
    dtype_flags = ("--dtype", dtype) if dtype and engine != "tensorrt-llm" else ()
    if config.weights_repo:
        return _Source(config.weights_repo, dtype_flags)
    # An unknown native format is taken as the usual 16-bit release.
    unquantized = config.native_dtype in HF_DTYPES or not config.native_dtype
    if quant == config.native_dtype or (dtype and unquantized):
        return _Source(config.hf_repo, dtype_flags)
    if quant == "fp8" and engine != "tensorrt-llm" and unquantized:
        note = _(
            "%(engine)s quantizes the original checkpoint to FP8 while loading: the "
            "download is the full 16-bit size."
        ) % {"engine": ENGINE_NAMES[engine]}
        return _Source(config.hf_repo, ("--quantization", "fp8"), (note,))
    return _placeholder(config)


def _server_tp(config: LaunchConfig) -> int:
    """A request sized for llama.cpp has TP 1 over several devices; servers split over all."""
    return config.tensor_parallel if config.tensor_parallel > 1 else config.gpus


def _offload_flags(config: LaunchConfig) -> list[str]:
    """--cpu-offload-gb is GiB per GPU: the offloaded bytes over the TP ranks, rounded up."""
    if not config.offloaded_bytes:
        return []
    per_device = cpu_offload_gib_per_device(config.offloaded_bytes, _server_tp(config))
    return ["--cpu-offload-gb", str(per_device)]


def _sizing_flags(config: LaunchConfig, engine: str, kv: tuple[str, ...] = ()) -> list[str]:
    """Devices, context, sequences, the KV flags and the memory share, in the order every
    server's docs list them."""
    flags = SERVER_FLAGS[engine]
    share = config.gpu_memory_utilization or flags.memory_default
    return [
        *(flags.tensor_parallel, str(_server_tp(config))),
        *(flags.context, str(config.context_tokens)),
        *(flags.sequences, str(_server_sequences(config))),
        *kv,
        *(flags.memory_share, str(share)),
    ]


def _server_sequences(config: LaunchConfig) -> int:
    return max(config.sequences, config.server_sequences)


def _batch_notes(config: LaunchConfig, flag: str) -> tuple[str, ...]:
    """Why the batch cap is above the page's sequences: the serving point's users."""
    if _server_sequences(config) <= config.sequences:
        return ()
    return (
        _(
            "%(flag)s %(n)s: the most users that each get the serving point's speed and "
            "first-token time (the page sizes %(m)s); the engine admits fewer when its KV "
            "cache is full."
        )
        % {"flag": flag, "n": _server_sequences(config), "m": config.sequences},
    )


def vllm(config: LaunchConfig) -> LaunchCommand:
    source = _server_source(config, "vllm")
    kv = "auto"
    if config.kv == "fp8":
        kv = "fp8_inc" if config.backend == "hpu" else "fp8"
    parts = [
        f"vllm serve {shlex.quote(source.model)}",
        *source.flags,
        *_sizing_flags(config, "vllm", ("--kv-cache-dtype", kv)),
        *_offload_flags(config),
    ]
    notes = (
        source.notes
        + _backend_notes("vllm", config.backend)
        + _batch_notes(config, "--max-num-seqs")
    )
    if config.offloaded_bytes and config.moe_experts:
        parts += ["--cpu-offload-params", "experts"]
        notes += (_("--cpu-offload-params needs a recent vLLM release."),)
    return LaunchCommand("vllm", _join(parts), None, notes)


def sglang(config: LaunchConfig) -> LaunchCommand:
    source = _server_source(config, "sglang")
    kv = ("--kv-cache-dtype", "fp8_e4m3" if config.kv == "fp8" else "auto")
    device = SGLANG_DEVICES.get(config.backend)
    # engine_support.json: the MLX path is switched on with SGLANG_USE_MLX=1.
    mlx_env = "SGLANG_USE_MLX=1 " if config.backend == "metal" else ""
    parts = [
        f"{mlx_env}python -m sglang.launch_server",
        *("--model-path", shlex.quote(source.model)),
        *source.flags,
        *_sizing_flags(config, "sglang", kv),
        *(("--device", device) if device else ()),
        *_offload_flags(config),
    ]
    notes = (
        source.notes
        + _backend_notes("sglang", config.backend)
        + _batch_notes(config, "--max-running-requests")
    )
    if config.offloaded_bytes and config.moe_experts:
        notes += (_("SGLang offloads weights in load order, not the MoE experts first."),)
    return LaunchCommand("sglang", _join(parts), None, notes)


def tensorrt_llm(config: LaunchConfig) -> LaunchCommand:
    """trtllm-serve on its PyTorch backend; an FP8 cache is an LLM API option in YAML."""
    source = _server_source(config, "tensorrt-llm")
    parts = [
        f"trtllm-serve {shlex.quote(source.model)}",
        *("--backend", "pytorch"),
        *_sizing_flags(config, "tensorrt-llm"),
    ]
    prefix = ""
    if config.kv == "fp8":
        parts += ["--extra_llm_api_options", "extra_llm_api_options.yaml"]
        prefix = _heredoc("extra_llm_api_options.yaml", "kv_cache_config:\n  dtype: fp8")
    notes = source.notes + _batch_notes(config, "--max_batch_size")
    return LaunchCommand("tensorrt-llm", prefix + _join(parts), None, notes)


def _mlx_source(config: LaunchConfig) -> _Source:
    if config.weights_repo:
        return _Source(config.weights_repo)
    if config.weights_format == "hf":
        return _Source(config.hf_repo)
    bits = config.quant.removeprefix("mlx-").removesuffix("bit")
    note = _(
        "The repository name is a placeholder: pick an mlx-community %(bits)s-bit repo or "
        "make one with mlx_lm.convert --hf-path %(repo)s -q --q-bits %(bits)s."
    ) % {"bits": bits, "repo": config.hf_repo}
    return _Source(f"mlx-community/{_model_name(config)}-{bits}bit", (), (note,))


def mlx(config: LaunchConfig) -> LaunchCommand:
    """mlx_lm.server: --max-kv-size holds each sequence's cache at the context; a q8_0 or
    q4_0 cache is --kv-bits 8 or 4 (group 64: 8.5 or 4.5 bits per value, as q8_0/q4_0),
    which the server cannot combine with --max-kv-size, so the prompt is capped instead."""
    source = _mlx_source(config)
    parts = ["mlx_lm.server", *("--model", shlex.quote(source.model))]
    notes = source.notes
    if config.kv in MLX_KV_BITS:
        bits = MLX_KV_BITS[config.kv]
        parts += ["--kv-bits", bits, "--max-prompt-tokens", str(config.context_tokens)]
        notes += (_("--max-prompt-tokens caps the prompt; answers can grow the cache."),)
    else:
        parts += ["--max-kv-size", str(config.context_tokens)]
    parts += ["--decode-concurrency", str(config.sequences)]
    if config.gpus > 1:
        notes += (_("Several Macs: start the server under mlx.launch (MLX distributed)."),)
    return LaunchCommand("mlx", _join(parts), None, notes)


BUILDERS: dict[str, Callable[[LaunchConfig], LaunchCommand]] = {
    "llama.cpp": llama_cpp,
    "ollama": ollama,
    "vllm": vllm,
    "sglang": sglang,
    "tensorrt-llm": tensorrt_llm,
    "mlx": mlx,
}


def launch_commands(config: LaunchConfig) -> dict[str, LaunchCommand]:
    """engine name -> its command or its refusal, for every engine in estimator order."""
    commands = {}
    for engine in ENGINES:
        reason = refusal(
            engine=engine,
            weights_format=config.weights_format,
            quant=config.quant,
            backend=config.backend,
            kv=config.kv,
        ) or _setup_refusal(engine, config)
        commands[engine] = (
            LaunchCommand(engine, None, reason) if reason else BUILDERS[engine](config)
        )
    return commands
