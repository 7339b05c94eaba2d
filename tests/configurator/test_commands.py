"""Launch commands follow the configuration: context, GPUs, KV type, offload."""

from __future__ import annotations

from sizing_site.configurator.commands import LaunchConfig, launch_commands, launch_config


def config(**changes: object) -> LaunchConfig:
    base: dict[str, object] = {
        "hf_repo": "zai-org/GLM-4.5-Air",
        "gguf_repo": "unsloth/GLM-4.5-Air-GGUF",
        "quant": "Q4_K_M",
        "gguf": True,
        "context_tokens": 8192,
        "gpus": 1,
        "sequences": 1,
        "kv": "f16",
        "n_layers": 46,
        "offloaded_layers": 0,
        "offloaded_bytes": 0,
    }
    base.update(changes)
    return LaunchConfig(**base)  # type: ignore[arg-type]


def flat(text: str) -> str:
    return " ".join(text.replace("\\\n", " ").split())


def test_llama_cpp_gives_each_slot_the_context_and_splits_over_gpus() -> None:
    command = flat(launch_commands(config(sequences=4, gpus=2, kv="q8_0"))["llama.cpp"])
    # -c is the total of all slots: 8,192 x 4 = 32,768
    assert "llama-server -hf unsloth/GLM-4.5-Air-GGUF:Q4_K_M" in command
    assert "-c 32768" in command and "-np 4" in command
    assert "-fa on" in command and "-ctk q8_0" in command and "-ctv q8_0" in command
    assert "--tensor-split 1,1" in command
    assert "-ngl 999" in command


def test_llama_cpp_keeps_offloaded_layers_off_the_gpu() -> None:
    # 46 layers, 5 in host memory: -ngl 41
    command = flat(launch_commands(config(offloaded_layers=5))["llama.cpp"])
    assert "-ngl 41" in command


def test_llama_cpp_names_a_file_when_no_gguf_repo_is_known() -> None:
    command = flat(launch_commands(config(gguf_repo=""))["llama.cpp"])
    assert "-m GLM-4.5-Air-Q4_K_M.gguf" in command


def test_vllm_uses_tensor_parallelism_and_an_fp8_cache() -> None:
    command = flat(
        launch_commands(config(gguf=False, quant="bf16", gpus=4, kv="fp8", sequences=8))["vllm"]
    )
    assert command.startswith("vllm serve zai-org/GLM-4.5-Air")
    for flag in (
        "--max-model-len 8192",
        "--tensor-parallel-size 4",
        "--kv-cache-dtype fp8",
        "--max-num-seqs 8",
        "--gpu-memory-utilization 0.9",
    ):
        assert flag in command


def test_vllm_offload_is_per_gpu_in_whole_gb() -> None:
    # 3.5 GB over 2 GPUs = 1.75 GB each, rounded up to 2
    command = flat(
        launch_commands(config(gguf=False, quant="bf16", gpus=2, offloaded_bytes=3_500_000_000))[
            "vllm"
        ]
    )
    assert "--cpu-offload-gb 2" in command


def test_ollama_sets_context_kv_type_and_flash_attention() -> None:
    command = launch_commands(config(kv="q8_0", context_tokens=32768, offloaded_layers=6))["ollama"]
    assert "OLLAMA_CONTEXT_LENGTH=32768" in command
    assert "OLLAMA_KV_CACHE_TYPE=q8_0" in command
    assert "OLLAMA_FLASH_ATTENTION=1" in command
    assert "PARAMETER num_ctx 32768" in command
    assert "PARAMETER num_gpu 40" in command  # 46 - 6
    assert "FROM hf.co/unsloth/GLM-4.5-Air-GGUF:Q4_K_M" in command


def test_sglang_matches_context_tp_and_kv() -> None:
    command = flat(launch_commands(config(gguf=False, quant="bf16", gpus=2, kv="fp8"))["sglang"])
    assert command.startswith("python -m sglang.launch_server --model-path zai-org/GLM-4.5-Air")
    assert "--context-length 8192" in command and "--tp 2" in command
    assert "--kv-cache-dtype fp8_e4m3" in command


def test_launch_config_reads_the_estimator_request_and_result() -> None:
    request = {
        "weights": {"format": "gguf", "quant": "Q4_K_M"},
        "device": {"count": 2},
        "workload": {"context_tokens": 4096, "concurrent_sequences": 3, "kv_cache_dtype": "q8_0"},
    }
    got = launch_config(
        request,
        {"offloaded_bytes": 7},
        hf_repo="a/b",
        gguf_repo="",
        layers=(2, 30),
    )
    assert (got.quant, got.gpus, got.sequences, got.kv) == ("Q4_K_M", 2, 3, "q8_0")
    assert (got.offloaded_layers, got.n_layers, got.offloaded_bytes) == (2, 30, 7)
