"""Launch commands for llama.cpp, vLLM, Ollama and SGLang that match one configuration.

Every number in a command comes from the estimator's request or result (context, devices,
KV type, offloaded layers and bytes); this module only spells the engines' flags. Flags as
documented by each engine: llama.cpp tools/server/README.md, vLLM `vllm serve --help`,
Ollama docs/faq.md (environment variables) and docs/modelfile.md, SGLang server arguments.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The memory shares the estimator sized the KV cache with, so the command matches the page.
from estimator.memory import SGLANG_MEM_FRACTION_STATIC, VLLM_GPU_MEMORY_UTILIZATION

# llama.cpp's -ngl takes a layer count; any number above the model's layers means "all".
ALL_LAYERS = 999
# vLLM's and SGLang's KV flags: their default cache type follows the model dtype ("auto").
VLLM_KV = {"fp8": "fp8"}
SGLANG_KV = {"fp8": "fp8_e4m3"}


@dataclass(frozen=True)
class LaunchConfig:
    hf_repo: str  # the original checkpoint, e.g. "zai-org/GLM-4.5-Air"
    gguf_repo: str  # a repository with GGUF files for this quant, "" when unknown
    quant: str  # GGUF file type ("Q4_K_M") or HF dtype ("bf16")
    gguf: bool
    context_tokens: int
    gpus: int
    sequences: int
    kv: str
    n_layers: int
    offloaded_layers: int
    offloaded_bytes: int  # all devices together


def launch_config(
    request: Mapping[str, Any],
    result: Mapping[str, Any],
    *,
    hf_repo: str,
    gguf_repo: str,
    layers: tuple[int, int],
) -> LaunchConfig:
    """The command inputs from an estimator request and its result; `layers` is
    (offloaded layers, model layers) as the estimator placed them."""
    weights, workload = request["weights"], request["workload"]
    gguf = weights["format"] == "gguf"
    return LaunchConfig(
        hf_repo=hf_repo,
        gguf_repo=gguf_repo,
        quant=weights["quant"] if gguf else weights["dtype"],
        gguf=gguf,
        context_tokens=workload["context_tokens"],
        gpus=request["device"]["count"],
        sequences=workload["concurrent_sequences"],
        kv=workload["kv_cache_dtype"],
        n_layers=layers[1],
        offloaded_layers=layers[0],
        offloaded_bytes=result["offloaded_bytes"],
    )


def _gguf_file(config: LaunchConfig) -> str:
    name = config.hf_repo.rsplit("/", 1)[-1] or "model"
    return f"{name}-{config.quant}.gguf"


def _offload_gb_per_gpu(config: LaunchConfig) -> int:
    """vLLM's and SGLang's --cpu-offload-gb is per GPU, in whole GB (rounded up)."""
    return -(-config.offloaded_bytes // (config.gpus * 10**9))


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


def llama_cpp(config: LaunchConfig) -> str:
    """llama-server: -c is the total context of all slots (-np), so context x sequences."""
    source = (
        ["-hf", shlex.quote(f"{config.gguf_repo}:{config.quant}")]
        if config.gguf and config.gguf_repo
        else ["-m", shlex.quote(_gguf_file(config))]
    )
    on_gpu = config.n_layers - config.offloaded_layers if config.offloaded_layers else ALL_LAYERS
    parts = [
        "llama-server",
        *source,
        *("-c", str(config.context_tokens * config.sequences)),
        *("-np", str(config.sequences)),
        *("-ngl", str(on_gpu)),
        *("-fa", "on"),
        *("-ctk", config.kv, "-ctv", config.kv),
    ]
    if config.gpus > 1:
        parts += ["--tensor-split", ",".join(["1"] * config.gpus)]
    return _join(parts)


def vllm(config: LaunchConfig) -> str:
    model = (
        [shlex.quote(_gguf_file(config)), "--tokenizer", shlex.quote(config.hf_repo)]
        if config.gguf
        else [shlex.quote(config.hf_repo)]
    )
    parts = [
        "vllm serve",
        *model,
        *("--max-model-len", str(config.context_tokens)),
        *("--tensor-parallel-size", str(config.gpus)),
        *("--kv-cache-dtype", VLLM_KV.get(config.kv, "auto")),
        *("--max-num-seqs", str(config.sequences)),
        *("--gpu-memory-utilization", str(VLLM_GPU_MEMORY_UTILIZATION)),
    ]
    if not config.gguf and config.quant == "fp8" and "fp8" not in config.hf_repo.lower():
        parts += ["--quantization", "fp8"]  # vLLM quantizes a bf16 checkpoint on load
    if config.offloaded_bytes:
        parts += ["--cpu-offload-gb", str(_offload_gb_per_gpu(config))]
    return _join(parts)


def ollama(config: LaunchConfig) -> str:
    """The server's environment, then the model with num_ctx (and num_gpu when layers stay
    in host memory) in a Modelfile."""
    kv = config.kv if config.kv in ("f16", "q8_0", "q4_0") else "f16"
    env = [
        f"OLLAMA_CONTEXT_LENGTH={config.context_tokens}",
        f"OLLAMA_NUM_PARALLEL={config.sequences}",
        "OLLAMA_FLASH_ATTENTION=1",
        f"OLLAMA_KV_CACHE_TYPE={kv}",
    ]
    source = (
        f"hf.co/{config.gguf_repo}:{config.quant}"
        if config.gguf and config.gguf_repo
        else f"./{_gguf_file(config)}"
    )
    modelfile = [f"FROM {source}", f"PARAMETER num_ctx {config.context_tokens}"]
    if config.offloaded_layers:
        modelfile.append(f"PARAMETER num_gpu {config.n_layers - config.offloaded_layers}")
    body = "\n".join(modelfile)
    return (
        " \\\n".join(env)
        + " ollama serve\n\n"
        + f"cat > Modelfile <<'EOF'\n{body}\nEOF\n"
        + "ollama create local-model -f Modelfile\nollama run local-model"
    )


def sglang(config: LaunchConfig) -> str:
    parts = [
        "python -m sglang.launch_server",
        *("--model-path", shlex.quote(config.hf_repo)),
        *("--context-length", str(config.context_tokens)),
        *("--tp", str(config.gpus)),
        *("--kv-cache-dtype", SGLANG_KV.get(config.kv, "auto")),
        *("--max-running-requests", str(config.sequences)),
        *("--mem-fraction-static", str(SGLANG_MEM_FRACTION_STATIC)),
    ]
    if not config.gguf and config.quant == "fp8" and "fp8" not in config.hf_repo.lower():
        parts += ["--quantization", "fp8"]
    if config.offloaded_bytes:
        parts += ["--cpu-offload-gb", str(_offload_gb_per_gpu(config))]
    return _join(parts)


ENGINES = {"llama.cpp": llama_cpp, "vllm": vllm, "ollama": ollama, "sglang": sglang}


def launch_commands(config: LaunchConfig) -> dict[str, str]:
    """engine name -> command text, for every engine the configurator offers."""
    return {name: build(config) for name, build in ENGINES.items()}
