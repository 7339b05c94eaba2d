"""Launch commands that load exactly what was sized, or the reason an engine cannot.

Every number in a command comes from the estimator's request or result (context, devices,
tensor parallelism, KV type, memory share, offloaded layers and bytes); the weights format
decides which repository or file each engine loads. The flags are the engines' own
(estimator.engines.ENGINE_TABLE, with sources); beyond them:

- llama.cpp: ``-hf <repo>[:quant]``, ``-m``, ``-fa on``, ``--cpu-moe``, ``--n-cpu-moe``.
- Ollama: OLLAMA_FLASH_ATTENTION, ``FROM hf.co/<repo>:<quant>``, ``PARAMETER num_ctx``.
- vLLM: ``--dtype``, ``--quantization`` ("If None, we first check the quantization_config
  attribute in the model config file", so a quantized repo needs no flag), Intel Gaudi's
  fp8 cache ``fp8_inc``, ``--cpu-offload-params``.
- SGLang: ``--model-path``, ``--quantization fp8`` ("on a fp16 checkpoint or directly load
  a fp8 checkpoint without specifying any arguments").
- TensorRT-LLM: ``trtllm-serve MODEL --backend pytorch --extra_llm_api_options``.
- mlx-lm: ``mlx_lm.server --model --max-prompt-tokens``; ``--max-kv-size`` cannot be
  combined with ``--kv-bits``. mlx-lm README: ``mlx_lm.convert --hf-path ... -q --q-bits``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace

from estimator.engines import (
    ENGINES,
    default_memory_share,
    engine_capability,
    kv_cli_value,
    llama_gpu_layers,
    server_tensor_parallel,
)
from estimator.launch.config import HF_DTYPES, LaunchCommand, LaunchConfig
from estimator.launch.messages import Message, _
from estimator.launch.refusals import refusal, setup_refusal
from estimator.memory import cpu_offload_gib_per_device

# How a format is named in words, and the tools that make such a checkpoint ("" = none).
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
SGLANG_DEVICES = {"cann": "npu", "hpu": "hpu", "xpu": "xpu", "cpu": "cpu"}
Notes = tuple[Message, ...]


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


def _gguf_source(config: LaunchConfig) -> str | None:
    """repo:quant of the catalog's GGUF download for the sized quant, None when none is
    recorded (the command is then refused in words: _no_gguf)."""
    return f"{config.gguf_repo}:{config.quant}" if config.gguf_repo else None


def _no_gguf(config: LaunchConfig, engine: str) -> LaunchCommand:
    """No GGUF file of this model at this quant is recorded: say so, and how to make one
    (llama.cpp's convert_hf_to_gguf.py, then llama-quantize), instead of a made-up name."""
    reason = _(
        "No %(quant)s GGUF download of %(repo)s is recorded in the catalog. Pick another "
        "quantization, or make the file: python convert_hf_to_gguf.py on a download of "
        "%(repo)s, then llama-quantize to %(quant)s.",
        quant=config.quant,
        repo=config.hf_repo,
    )
    return LaunchCommand(engine, None, reason)


def _backend_notes(engine: str, backend: str) -> Notes:
    note = None
    plugins = dict(engine_capability(engine).plugins)
    if engine == "vllm" and backend in plugins:
        note = _(
            "%(backend)s: install the %(package)s plugin; the command is the same.",
            backend=backend,
            package=plugins[backend],
        )
    elif engine == "vllm" and backend != "cuda":
        note = _("%(backend)s: the same command in vLLM's %(backend)s build.", backend=backend)
    elif engine == "llama.cpp" and backend not in ("cuda", "metal", "cpu"):
        note = _("Use a llama.cpp build with the %(backend)s backend.", backend=backend)
    elif engine == "sglang" and backend in ("metal", "musa"):
        note = _("SGLang on %(backend)s is experimental.", backend=backend)
    return (note,) if note else ()


def llama_cpp(config: LaunchConfig) -> LaunchCommand:
    """llama-server: -c is the total context of all slots (-np), so context x sequences;
    -ngl is engines.llama_gpu_layers (the output layer counts as one of its slots), the
    number "make it fit" gives too; MoE offload keeps every layer on the GPUs but the
    experts: all (--cpu-moe) or those of the first N layers (--n-cpu-moe N), as
    common/arg.cpp defines them."""
    flags = engine_capability("llama.cpp").flags
    source = _gguf_source(config)
    if source is None:
        return _no_gguf(config, "llama.cpp")
    moe = config.moe_experts or config.moe_layers
    on_gpu = llama_gpu_layers(config.n_layers, 0 if moe else config.offloaded_layers)
    parts = [
        "llama-server",
        *("-hf", shlex.quote(source)),
        *(flags.context, str(config.context_tokens * config.sequences)),
        *(flags.sequences, str(config.sequences)),
        *(flags.gpu_layers, str(on_gpu)),
        *("-fa", "on"),
        *(part for flag in flags.kv_cache for part in (flag, config.kv)),
    ]
    if config.moe_experts:
        parts.append("--cpu-moe")
    elif config.moe_layers:
        parts += ["--n-cpu-moe", str(config.moe_layers)]
    if config.gpus > 1:
        parts += ["--tensor-split", ",".join(["1"] * config.gpus)]
    if config.fit_off:  # within the default 1 GiB margin: memory.start_settings
        parts += ["--fit", "off"]
    notes = _backend_notes("llama.cpp", config.backend)
    return LaunchCommand("llama.cpp", _join(parts), None, notes)


def ollama(config: LaunchConfig) -> LaunchCommand:
    """The server's environment, then the model with num_ctx (and num_gpu, the layers not
    in host memory, n_layers - offloaded_layers) in a Modelfile."""
    flags = engine_capability("ollama").flags
    env = [
        f"{flags.context}={config.context_tokens}",
        f"{flags.sequences}={config.sequences}",
        "OLLAMA_FLASH_ATTENTION=1",
        *(f"{flag}={config.kv}" for flag in flags.kv_cache),
    ]
    source = _gguf_source(config)
    if source is None:
        return _no_gguf(config, "ollama")
    modelfile = [f"FROM hf.co/{source}", f"PARAMETER num_ctx {config.context_tokens}"]
    if config.offloaded_layers:
        on_gpu = config.n_layers - config.offloaded_layers
        modelfile.append(f"PARAMETER {flags.gpu_layers} {on_gpu}")
    text = (
        " \\\n".join(env)
        + " ollama serve\n\n"
        + _heredoc("Modelfile", "\n".join(modelfile))
        + "ollama create local-model -f Modelfile\nollama run local-model"
    )
    return LaunchCommand("ollama", text, None)


@dataclass(frozen=True)
class _Source:
    model: str
    flags: tuple[str, ...] = ()
    notes: Notes = ()


def _no_checkpoint(config: LaunchConfig, engine: str) -> LaunchCommand:
    """No checkpoint of this model in the sized format is recorded: say so in words, with
    the tools that make one (CHECKPOINTS), instead of a made-up repository name."""
    scheme, tools = CHECKPOINTS[config.quant]
    if tools:
        reason = _(
            "No %(scheme)s checkpoint of %(repo)s is recorded in the catalog. Pick another "
            "format, or quantize %(repo)s with %(tools)s.",
            scheme=scheme,
            repo=config.hf_repo,
            tools=tools,
        )
    else:
        reason = _(
            "No %(scheme)s checkpoint of %(repo)s is recorded in the catalog. Pick another format.",
            scheme=scheme,
            repo=config.hf_repo,
        )
    return LaunchCommand(engine, None, reason)


def _server_source(config: LaunchConfig, engine: str) -> _Source | None:
    """The repository a vLLM-like engine loads for the sized format, and its flags; None
    when the catalog records none. A quantized repo carries its quantization_config, so it
    needs no --quantization."""
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
            "download is the full 16-bit size.",
            engine=engine_capability(engine).label,
        )
        return _Source(config.hf_repo, ("--quantization", "fp8"), (note,))
    return None


def _server_tp(config: LaunchConfig) -> int:
    return server_tensor_parallel(config.tensor_parallel, config.gpus)


def _offload_flags(config: LaunchConfig, engine: str) -> list[str]:
    """--cpu-offload-gb is GiB per GPU: the offloaded bytes over the TP ranks, rounded up."""
    if not config.offloaded_bytes:
        return []
    per_device = cpu_offload_gib_per_device(config.offloaded_bytes, _server_tp(config))
    return [engine_capability(engine).flags.cpu_offload, str(per_device)]


def _sizing_flags(config: LaunchConfig, engine: str, kv: tuple[str, ...] = ()) -> list[str]:
    """Devices, context, sequences, the KV flags and the memory share, in the order every
    server's docs list them."""
    flags = engine_capability(engine).flags
    share = config.gpu_memory_utilization or default_memory_share(engine)
    return [
        *(flags.tensor_parallel, str(_server_tp(config))),
        *(flags.context, str(config.context_tokens)),
        *(flags.sequences, str(_server_sequences(config))),
        *kv,
        *(flags.memory_share, str(share)),
    ]


def _server_sequences(config: LaunchConfig) -> int:
    return max(config.sequences, config.server_sequences)


def _batch_notes(config: LaunchConfig, engine: str) -> Notes:
    """Why the batch cap is above the page's sequences: the serving point's users."""
    if _server_sequences(config) <= config.sequences:
        return ()
    note = _(
        "%(flag)s %(n)s: the most users that each get the serving point's speed and "
        "first-token time (the page sizes %(m)s); the engine admits fewer when its KV "
        "cache is full.",
        flag=engine_capability(engine).flags.sequences,
        n=_server_sequences(config),
        m=config.sequences,
    )
    return (note,)


def _kv_flags(config: LaunchConfig, engine: str) -> tuple[str, ...]:
    """The server's cache flag: the type as it spells it, "auto" (the model's dtype) for
    one it has no spelling for; Intel Gaudi's vLLM spells fp8 fp8_inc."""
    value = kv_cli_value(engine, config.kv) or "auto"
    if engine == "vllm" and value == "fp8" and config.backend == "hpu":
        value = "fp8_inc"
    return (*engine_capability(engine).flags.kv_cache, value)


def vllm(config: LaunchConfig) -> LaunchCommand:
    source = _server_source(config, "vllm")
    if source is None:
        return _no_checkpoint(config, "vllm")
    parts = [
        f"vllm serve {shlex.quote(source.model)}",
        *source.flags,
        *_sizing_flags(config, "vllm", _kv_flags(config, "vllm")),
        *_offload_flags(config, "vllm"),
    ]
    notes = source.notes + _backend_notes("vllm", config.backend) + _batch_notes(config, "vllm")
    if config.offloaded_bytes and config.moe_experts:
        parts += ["--cpu-offload-params", "experts"]
        notes += (_("--cpu-offload-params needs a recent vLLM release."),)
    return LaunchCommand("vllm", _join(parts), None, notes)


def sglang(config: LaunchConfig) -> LaunchCommand:
    source = _server_source(config, "sglang")
    if source is None:
        return _no_checkpoint(config, "sglang")
    device = SGLANG_DEVICES.get(config.backend)
    # engine_support.json: the MLX path is switched on with SGLANG_USE_MLX=1.
    mlx_env = "SGLANG_USE_MLX=1 " if config.backend == "metal" else ""
    parts = [
        f"{mlx_env}python -m sglang.launch_server",
        *("--model-path", shlex.quote(source.model)),
        *source.flags,
        *_sizing_flags(config, "sglang", _kv_flags(config, "sglang")),
        *(("--device", device) if device else ()),
        *_offload_flags(config, "sglang"),
    ]
    notes = source.notes + _backend_notes("sglang", config.backend) + _batch_notes(config, "sglang")
    if config.offloaded_bytes and config.moe_experts:
        notes += (_("SGLang offloads weights in load order, not the MoE experts first."),)
    return LaunchCommand("sglang", _join(parts), None, notes)


def tensorrt_llm(config: LaunchConfig) -> LaunchCommand:
    """trtllm-serve on its PyTorch backend; an FP8 cache is an LLM API option in YAML."""
    source = _server_source(config, "tensorrt-llm")
    if source is None:
        return _no_checkpoint(config, "tensorrt-llm")
    parts = [
        f"trtllm-serve {shlex.quote(source.model)}",
        *("--backend", "pytorch"),
        *_sizing_flags(config, "tensorrt-llm"),
    ]
    prefix = ""
    if dtype := kv_cli_value("tensorrt-llm", config.kv):
        parts += ["--extra_llm_api_options", "extra_llm_api_options.yaml"]
        prefix = _heredoc("extra_llm_api_options.yaml", f"kv_cache_config:\n  dtype: {dtype}")
    notes = source.notes + _batch_notes(config, "tensorrt-llm")
    return LaunchCommand("tensorrt-llm", prefix + _join(parts), None, notes)


def _mlx_source(config: LaunchConfig) -> _Source | None:
    """The MLX repository of the catalog's weights row, the original release for 16-bit
    weights, else None."""
    if config.weights_repo:
        return _Source(config.weights_repo)
    if config.weights_format == "hf":
        return _Source(config.hf_repo)
    return None


def _no_mlx(config: LaunchConfig) -> LaunchCommand:
    """No MLX repository at this bit width is recorded: say so, with the convert command."""
    bits = config.quant.removeprefix("mlx-").removesuffix("bit")
    reason = _(
        "No %(bits)s-bit MLX repository of %(repo)s is recorded in the catalog. Make one "
        "with mlx_lm.convert --hf-path %(repo)s -q --q-bits %(bits)s, then serve it.",
        bits=bits,
        repo=config.hf_repo,
    )
    return LaunchCommand("mlx", None, reason)


def mlx(config: LaunchConfig) -> LaunchCommand:
    """mlx_lm.server: --max-kv-size holds each sequence's cache at the context; a q8_0 or
    q4_0 cache is --kv-bits 8 or 4 (group 64: 8.5 or 4.5 bits per value, as q8_0/q4_0),
    which the server cannot combine with --max-kv-size, so the prompt is capped instead."""
    flags = engine_capability("mlx").flags
    source = _mlx_source(config)
    if source is None:
        return _no_mlx(config)
    parts = ["mlx_lm.server", *("--model", shlex.quote(source.model))]
    notes = source.notes
    if bits := kv_cli_value("mlx", config.kv):
        parts += [*flags.kv_cache, bits, "--max-prompt-tokens", str(config.context_tokens)]
        notes += (_("--max-prompt-tokens caps the prompt; answers can grow the cache."),)
    else:
        parts += [flags.context, str(config.context_tokens)]
    parts += [flags.sequences, str(config.sequences)]
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


def launch_command(config: LaunchConfig, engine: str) -> LaunchCommand:
    """`engine`'s command for the sized setup, or its refusal (refusals.refusal for the
    weights, backend and cache; refusals.setup_refusal for the offload)."""
    reason = refusal(
        engine=engine,
        weights_format=config.weights_format,
        quant=config.quant,
        backend=config.backend,
        kv=config.kv,
    ) or setup_refusal(engine, config)
    if reason:
        return LaunchCommand(engine, None, reason)
    return _with_wired_limit(BUILDERS[engine](config), config.wired_limit_mb)


def _with_wired_limit(command: LaunchCommand, wired_limit_mb: int) -> LaunchCommand:
    """On a Mac whose setup needs more than the GPU's default working set, the command
    starts by raising it (memory.start_settings; `sudo sysctl iogpu.wired_limit_mb`, which
    lasts until the next restart)."""
    if not wired_limit_mb or command.text is None:
        return command
    note = _(
        "The first line raises macOS's GPU memory limit to %(mb)s MB until the next restart.",
        mb=wired_limit_mb,
    )
    text = f"sudo sysctl iogpu.wired_limit_mb={wired_limit_mb}\n{command.text}"
    return replace(command, text=text, notes=(*command.notes, note))


def launch_commands(config: LaunchConfig) -> dict[str, LaunchCommand]:
    """engine name -> its command or its refusal, for every engine in the table's order."""
    return {engine: launch_command(config, engine) for engine in ENGINES}
