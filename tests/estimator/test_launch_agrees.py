"""The launch command and "make it fit" give the same GPU layers and offload for the same
setup: both read estimator.engines (llama_gpu_layers, server_tensor_parallel)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from estimator.api import Offload, Request, parse_request, run_estimate
from estimator.api import cache as estimator_cache
from estimator.api.run import offloaded_layer_count
from estimator.engines import llama_gpu_layers
from estimator.launch import launch_commands, launch_config
from estimator.recommend import PlanStep, make_it_fit

CONFIGS = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation" / "configs"


def _request(name: str, **sections: Any) -> Request:
    config = json.loads((CONFIGS / f"{name}.json").read_text())
    return parse_request({"model": {"hf_config": config}, **sections})


def _offload_step(request: Request) -> PlanStep:
    n_layers = estimator_cache.model_spec(request.model.hf_config_json).n_layers
    steps = make_it_fit(request, run_estimate(request), run_estimate, n_layers)
    return next(step for step in steps if step.action == "offload_layers")


def _launched(request: Request, layers: int) -> str:
    """The engine's launch command with `layers` layers in host memory, as the page builds
    it from the estimate of that setup."""
    offload = Offload(layers=layers)
    changed = replace(request, workload=replace(request.workload, offload=offload))
    spec = estimator_cache.model_spec(request.model.hf_config_json)
    config = launch_config(
        changed,
        run_estimate(changed),
        hf_repo="org/model",
        gguf_repo="org/model-GGUF",
        weights_repo="",
        n_layers=spec.n_layers,
        offloaded_layers=offloaded_layer_count(changed, spec),
    )
    text = launch_commands(config)[request.engine.name].text
    assert text is not None
    return " ".join(text.replace("\\\n", " ").split())


def _flag(command: str, flag: str) -> str:
    found = re.search(rf"{re.escape(flag)} (\S+)", command)
    assert found, (flag, command)
    return found.group(1)


def test_the_worked_example_counts_the_output_layer() -> None:
    # Llama-3.1-8B BF16 (32 layers, 16.1 GB) on a 12 GB card: the fewest layers in host
    # memory that fit is 14, so llama.cpp keeps layers 14..31 (18) and the output layer
    # on the GPU: -ngl 32 + 1 - 14 = 19. "Make it fit" used to say 32 - 14 = 18, one slot
    # short, which leaves layer 14 on the CPU as well.
    request = _request(
        "meta-llama__Llama-3.1-8B-Instruct",
        weights={"format": "gguf", "quant": "BF16"},
        device={"memory_gb": 12, "bandwidth_gbps": 900},
    )
    step = _offload_step(request)
    assert step.change == {"workload.offload.layers": 14}
    assert step.flags == ("-ngl", "19") and llama_gpu_layers(32, 14) == 19
    assert _flag(_launched(request, 14), "-ngl") == "19"


LLAMA_CPP_SETUPS = [
    ("meta-llama__Llama-3.1-8B-Instruct", "Q8_0", 8, 8192),
    ("Qwen__Qwen3-32B", "Q4_K_M", 16, 16384),
    ("mistralai__Mixtral-8x7B-Instruct-v0.1", "Q4_K_M", 24, 8192),
]


@pytest.mark.parametrize(("model", "quant", "memory_gb", "context"), LLAMA_CPP_SETUPS)
def test_llama_cpp_make_it_fit_gives_the_launch_commands_ngl(
    model: str, quant: str, memory_gb: int, context: int
) -> None:
    request = _request(
        model,
        weights={"format": "gguf", "quant": quant},
        device={"memory_gb": memory_gb, "bandwidth_gbps": 900},
        workload={"context_tokens": context},
    )
    step = _offload_step(request)
    layers = step.change["workload.offload.layers"]
    assert step.flags[0] == "-ngl"
    assert _flag(_launched(request, layers), "-ngl") == step.flags[1]


def test_vllm_make_it_fit_gives_the_launch_commands_offload_per_gpu() -> None:
    # Llama-3.1-70B BF16 on 2 x 80 GB with TP 2: 5 layers (8.56 GB) in host memory,
    # 8.56e9 / (2 x 2^30) = 3.98, so --cpu-offload-gb 4 per GPU in both.
    request = _request(
        "meta-llama__Llama-3.1-70B-Instruct",
        weights={"format": "hf", "dtype": "bf16"},
        engine={"name": "vllm"},
        device={"memory_gb": 80, "bandwidth_gbps": 3350, "count": 2},
        workload={"tensor_parallel": 2},
    )
    step = _offload_step(request)
    assert step.change == {"workload.offload.layers": 5}
    assert step.flags == ("--cpu-offload-gb", "4")
    assert _flag(_launched(request, 5), "--cpu-offload-gb") == "4"
