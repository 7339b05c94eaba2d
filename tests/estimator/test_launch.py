"""Launch commands load what was sized (repo, context, devices, KV, memory share,
offload), or say why an engine cannot (estimator.launch)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.api import parse_request, run_estimate
from estimator.engines import BACKENDS, ENGINES, LLAMA_KV_TYPES
from estimator.launch import (
    MLX_QUANTS,
    LaunchCommand,
    LaunchConfig,
    launch_commands,
    launch_config,
    native_dtype,
    refusal,
)
from estimator.weights import GGUF_FILE_TYPES, HF_FORMATS

CONFIGS = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation" / "configs"

GLM_AIR = LaunchConfig(
    hf_repo="zai-org/GLM-4.5-Air",
    gguf_repo="unsloth/GLM-4.5-Air-GGUF",
    weights_repo="",
    weights_format="gguf",
    quant="Q4_K_M",
    native_dtype="bf16",
    context_tokens=8192,
    gpus=1,
    tensor_parallel=1,
    sequences=1,
    kv="f16",
    backend="cuda",
    gpu_memory_utilization=None,
    n_layers=46,  # GLM-4.5-Air config.json num_hidden_layers
    offloaded_layers=0,
    offloaded_bytes=0,
    moe_experts=False,
)
GLM_AIR_BF16 = replace(GLM_AIR, weights_format="hf", quant="bf16")


def command(config: LaunchConfig, engine: str) -> LaunchCommand:
    return launch_commands(config)[engine]


def text(config: LaunchConfig, engine: str) -> str:
    got = command(config, engine).text
    assert got is not None, command(config, engine).refused
    return got


def hf(config: LaunchConfig, quant: str) -> LaunchConfig:
    return replace(config, weights_format="hf", quant=quant)


def flat(value: str) -> str:
    return " ".join(value.replace("\\\n", " ").split())


# --- worked examples, engine by engine ---------------------------------------------------


def test_llama_cpp_loads_the_sized_gguf_quant_from_its_repo() -> None:
    config = replace(GLM_AIR, sequences=4, gpus=2, kv="q8_0")
    # -c is the total of all slots: 8,192 x 4 = 32,768; two GPUs split 1:1.
    assert text(config, "llama.cpp") == (
        "llama-server \\\n"
        "  -hf unsloth/GLM-4.5-Air-GGUF:Q4_K_M \\\n"
        "  -c 32768 \\\n"
        "  -np 4 \\\n"
        "  -ngl 999 \\\n"
        "  -fa on \\\n"
        "  -ctk q8_0 \\\n"
        "  -ctv q8_0 \\\n"
        "  --tensor-split 1,1"
    )


def test_llama_cpp_keeps_offloaded_layers_off_the_gpu() -> None:
    # 46 layers, 5 in host memory: llama.cpp's first GPU layer is n_layer + 1 - ngl
    # (the output layer counts), so -ngl 46 + 1 - 5 = 42
    assert "-ngl 42" in flat(text(replace(GLM_AIR, offloaded_layers=5), "llama.cpp"))


def test_llama_cpp_moves_all_experts_to_the_cpu_and_keeps_every_layer() -> None:
    config = replace(GLM_AIR, moe_experts=True, offloaded_bytes=50 * 10**9)
    got = flat(text(config, "llama.cpp"))
    assert "-ngl 999" in got and got.endswith("--cpu-moe")


def test_without_a_gguf_repo_llama_cpp_and_ollama_say_so_in_words() -> None:
    # No made-up file name: the command is refused with the way to make the file.
    for engine in ("llama.cpp", "ollama"):
        got = command(replace(GLM_AIR, gguf_repo=""), engine)
        assert got.text is None
        assert str(got.refused) == (
            "No Q4_K_M GGUF download of zai-org/GLM-4.5-Air is recorded in the catalog. Pick "
            "another quantization, or make the file: python convert_hf_to_gguf.py on a "
            "download of zai-org/GLM-4.5-Air, then llama-quantize to Q4_K_M."
        )


def test_ollama_sets_context_kv_type_and_layers_on_the_gpu() -> None:
    config = replace(GLM_AIR, kv="q8_0", context_tokens=32768, offloaded_layers=6)
    got = text(config, "ollama")
    assert "OLLAMA_CONTEXT_LENGTH=32768" in got and "OLLAMA_KV_CACHE_TYPE=q8_0" in got
    assert "FROM hf.co/unsloth/GLM-4.5-Air-GGUF:Q4_K_M" in got
    assert "PARAMETER num_ctx 32768" in got
    assert "PARAMETER num_gpu 40" in got  # 46 - 6


def test_vllm_loads_a_known_awq_repo_without_a_quantization_flag() -> None:
    # https://huggingface.co/bullpoint/GLM-4.6-AWQ: AWQ 4-bit, group 128 (llm-compressor).
    config = replace(
        GLM_AIR,
        hf_repo="zai-org/GLM-4.6",
        weights_repo="bullpoint/GLM-4.6-AWQ",
        weights_format="hf",
        quant="awq-int4",
        gpus=4,
        tensor_parallel=4,
    )
    assert text(config, "vllm") == (
        "vllm serve bullpoint/GLM-4.6-AWQ \\\n"
        "  --tensor-parallel-size 4 \\\n"
        "  --max-model-len 8192 \\\n"
        "  --max-num-seqs 1 \\\n"
        "  --kv-cache-dtype auto \\\n"
        "  --gpu-memory-utilization 0.9"
    )


def test_vllm_awq_without_a_known_repo_says_so_in_words() -> None:
    got = command(replace(GLM_AIR, weights_format="hf", quant="awq-int4"), "vllm")
    assert got.text is None
    assert str(got.refused) == (
        "No AWQ checkpoint of zai-org/GLM-4.5-Air is recorded in the catalog. Pick another "
        "format, or quantize zai-org/GLM-4.5-Air with llm-compressor/AutoAWQ."
    )


def test_vllm_bf16_on_four_gpus_uses_tp_4_and_the_sized_context() -> None:
    config = replace(GLM_AIR_BF16, gpus=4, tensor_parallel=4, context_tokens=32768, sequences=8)
    assert text(config, "vllm") == (
        "vllm serve zai-org/GLM-4.5-Air \\\n"
        "  --dtype bfloat16 \\\n"
        "  --tensor-parallel-size 4 \\\n"
        "  --max-model-len 32768 \\\n"
        "  --max-num-seqs 8 \\\n"
        "  --kv-cache-dtype auto \\\n"
        "  --gpu-memory-utilization 0.9"
    )


def test_a_llama_cpp_sized_request_gives_the_servers_tp_over_every_device() -> None:
    # catalog.sizing.sizing_request sets tensor_parallel 1 for llama.cpp over 2 devices.
    config = replace(GLM_AIR_BF16, gpus=2, tensor_parallel=1)
    assert "--tensor-parallel-size 2" in flat(text(config, "vllm"))
    assert "--tp 2" in flat(text(config, "sglang"))


def test_the_memory_share_the_estimator_used_reaches_every_server() -> None:
    config = replace(GLM_AIR_BF16, gpu_memory_utilization=0.8)
    assert "--gpu-memory-utilization 0.8" in flat(text(config, "vllm"))
    assert "--mem-fraction-static 0.8" in flat(text(config, "sglang"))
    assert "--kv_cache_free_gpu_memory_fraction 0.8" in flat(text(config, "tensorrt-llm"))
    # Defaults otherwise: estimator.engines, SGLang's memory_share 0.88.
    assert "--mem-fraction-static 0.88" in flat(text(GLM_AIR_BF16, "sglang"))


def test_an_fp8_cache_is_spelled_the_way_each_engine_takes_it() -> None:
    config = replace(GLM_AIR_BF16, kv="fp8")
    assert "--kv-cache-dtype fp8 " in flat(text(config, "vllm"))
    assert "--kv-cache-dtype fp8_e4m3" in flat(text(config, "sglang"))
    trt = text(config, "tensorrt-llm")
    assert trt.startswith("cat > extra_llm_api_options.yaml <<'EOF'\nkv_cache_config:\n")
    assert "  dtype: fp8\nEOF\n" in trt
    assert "--extra_llm_api_options extra_llm_api_options.yaml" in flat(trt)
    # Intel Gaudi's fp8 cache is fp8_inc (vLLM engine args, --kv-cache-dtype).
    assert "--kv-cache-dtype fp8_inc" in flat(text(replace(config, backend="hpu"), "vllm"))


def test_fp8_weights_without_a_repo_are_quantized_on_load() -> None:
    got = command(replace(GLM_AIR, weights_format="hf", quant="fp8"), "vllm")
    assert (got.text or "").startswith("vllm serve zai-org/GLM-4.5-Air \\\n  --quantization fp8")
    assert "quantizes the original checkpoint to FP8 while loading" in str(got.notes[0])


def test_an_fp8_original_checkpoint_needs_no_flag() -> None:
    config = replace(GLM_AIR, hf_repo="deepseek-ai/DeepSeek-V3", weights_format="hf", quant="fp8")
    assert flat(text(replace(config, native_dtype="fp8"), "vllm")).startswith(
        "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 1"
    )


def test_mxfp4_loads_the_original_repo_only_when_it_is_mxfp4() -> None:
    gpt_oss = replace(GLM_AIR, hf_repo="openai/gpt-oss-120b", weights_format="hf", quant="mxfp4")
    assert flat(text(replace(gpt_oss, native_dtype="mxfp4"), "vllm")).startswith(
        "vllm serve openai/gpt-oss-120b --tensor-parallel-size 1"
    )
    refused = command(hf(GLM_AIR, "mxfp4"), "vllm").refused
    assert str(refused).startswith("No MXFP4 checkpoint of zai-org/GLM-4.5-Air is recorded")


def test_vllm_offload_is_gib_per_gpu_rounded_up() -> None:
    # 3.5e9 B over TP 2 = 1.75e9 B = 1.63 GiB each, rounded up to 2.
    config = replace(GLM_AIR_BF16, gpus=2, tensor_parallel=2, offloaded_bytes=3_500_000_000)
    assert "--cpu-offload-gb 2" in flat(text(config, "vllm"))
    assert "--cpu-offload-gb 2" in flat(text(config, "sglang"))


def test_vllm_moe_offload_targets_the_experts() -> None:
    # 60 GiB of experts over TP 2 = 30 GiB per GPU.
    config = replace(
        GLM_AIR_BF16, gpus=2, tensor_parallel=2, offloaded_bytes=60 * 1024**3, moe_experts=True
    )
    assert flat(text(config, "vllm")).endswith("--cpu-offload-gb 30 --cpu-offload-params experts")


def test_sglang_names_the_device_off_cuda() -> None:
    got = flat(text(replace(GLM_AIR_BF16, backend="cann"), "sglang"))
    assert got.startswith("python -m sglang.launch_server --model-path zai-org/GLM-4.5-Air")
    assert got.endswith("--device npu")


def test_tensorrt_llm_serves_the_hf_repo_on_its_pytorch_backend() -> None:
    config = replace(GLM_AIR_BF16, gpus=2, tensor_parallel=2, sequences=4)
    assert text(config, "tensorrt-llm") == (
        "trtllm-serve zai-org/GLM-4.5-Air \\\n"
        "  --backend pytorch \\\n"
        "  --tp_size 2 \\\n"
        "  --max_seq_len 8192 \\\n"
        "  --max_batch_size 4 \\\n"
        "  --kv_cache_free_gpu_memory_fraction 0.9"
    )


def test_mlx_holds_each_sequence_cache_at_the_context() -> None:
    config = replace(GLM_AIR_BF16, backend="metal", sequences=2)
    assert text(config, "mlx") == (
        "mlx_lm.server \\\n"
        "  --model zai-org/GLM-4.5-Air \\\n"
        "  --max-kv-size 8192 \\\n"
        "  --decode-concurrency 2"
    )
    # q8_0 = --kv-bits 8 with group 64: 8 + 2 x 16 / 64 = 8.5 bits, as q8_0's 34 B / 32.
    quantized = flat(text(replace(config, kv="q8_0"), "mlx"))
    assert "--kv-bits 8 --max-prompt-tokens 8192" in quantized


def test_an_mlx_quant_without_a_repo_says_how_to_make_one() -> None:
    config = replace(GLM_AIR, weights_format="mlx", quant="mlx-4bit", backend="metal")
    got = command(config, "mlx")
    assert got.text is None
    assert "mlx_lm.convert --hf-path zai-org/GLM-4.5-Air -q --q-bits 4" in str(got.refused)


# --- refusals ------------------------------------------------------------------------------


def refused(config: LaunchConfig, engine: str) -> str:
    got = command(config, engine)
    assert got.text is None and got.refused is not None
    return str(got.refused)


def test_vllm_refuses_a_gguf() -> None:
    reason = refused(GLM_AIR, "vllm")
    assert "experimental" in reason and "single-file" in reason and "awq-int4" in reason
    assert "SGLang documents no GGUF serving" in refused(GLM_AIR, "sglang")


def test_llama_cpp_refuses_awq_and_names_the_gguf_of_similar_size() -> None:
    assert refused(hf(GLM_AIR, "awq-int4"), "llama.cpp") == (
        "llama.cpp loads GGUF files, not Hugging Face awq-int4 checkpoints; choose the GGUF "
        "quant of similar size, Q4_K_M."
    )
    assert "Q8_0" in refused(hf(GLM_AIR, "fp8"), "ollama")


def test_mlx_refuses_cuda() -> None:
    reason = refused(replace(GLM_AIR_BF16, backend="cuda"), "mlx")
    assert reason == "MLX has no cuda backend; it runs on metal."


def test_tensorrt_llm_refuses_rocm() -> None:
    assert refused(replace(GLM_AIR_BF16, backend="rocm"), "tensorrt-llm") == (
        "TensorRT-LLM has no rocm backend; it runs on cuda."
    )


def test_ollama_refuses_a_q4_1_cache() -> None:
    assert refused(replace(GLM_AIR, kv="q4_1"), "ollama") == (
        "Ollama has no q4_1 KV cache; it offers f16, q8_0, q4_0."
    )
    assert command(replace(GLM_AIR, kv="q4_1"), "llama.cpp").text is not None


def test_refusals_for_offload_an_engine_has_no_setting_for() -> None:
    assert "MoE experts" in refused(replace(GLM_AIR, moe_experts=True), "ollama")
    offloaded = replace(GLM_AIR_BF16, offloaded_bytes=10**9)
    assert "no weight offload" in refused(offloaded, "tensorrt-llm")


def test_refusal_answers_the_form_without_a_config() -> None:
    assert refusal(engine="vllm", weights_format="hf", quant="nvfp4", backend="rocm", kv="f16")
    assert refusal(engine="vllm", weights_format="hf", quant="bf16", backend="cuda", kv="q8_0")
    assert refusal(engine="vllm", weights_format="hf", quant="bf16", backend="cuda", kv="f32")
    assert not refusal(engine="vllm", weights_format="hf", quant="fp32", backend="cuda", kv="f32")
    assert not refusal(
        engine="llama.cpp", weights_format="gguf", quant="Q8_0", backend="sycl", kv="f32"
    )


def test_an_mlx_quant_is_an_mlx_checkpoint_whatever_the_form_calls_it() -> None:
    assert not refusal(
        engine="mlx", weights_format="hf", quant="mlx-4bit", backend="metal", kv="f16"
    )
    assert refusal(engine="vllm", weights_format="hf", quant="mlx-4bit", backend="cuda", kv="f16")


def test_a_vllm_plugin_backend_keeps_the_command_and_names_the_plugin() -> None:
    # catalog/data/engine_support.json: Ascend runs vLLM through the vllm-ascend plugin.
    got = command(replace(GLM_AIR_BF16, backend="cann"), "vllm")
    assert tuple(map(str, got.notes)) == (
        "cann: install the vllm-ascend plugin; the command is the same.",
    )
    assert (got.text or "").startswith("vllm serve zai-org/GLM-4.5-Air")


def test_every_engine_has_one_entry_in_estimator_order() -> None:
    got = launch_commands(GLM_AIR)
    assert tuple(got) == ("llama.cpp", "ollama", "vllm", "sglang", "tensorrt-llm", "mlx")
    assert all(c.engine == name and (c.text is None) == bool(c.refused) for name, c in got.items())


# --- reading the estimator request ----------------------------------------------------------


def llama_8b(**sections: Any) -> dict[str, Any]:
    """A request for Llama-3.1-8B (32 layers, bf16 config.json) on 80 GB devices."""
    config = json.loads((CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text())
    device = {"memory_gb": 80, "bandwidth_gbps": 3350, **sections.pop("device", {})}
    return {"model": {"hf_config": config}, "device": device, **sections}


def test_launch_config_reads_the_estimator_request_and_result() -> None:
    request = parse_request(
        llama_8b(
            weights={"format": "hf", "dtype": "awq-int4"},
            device={"count": 2, "vendor": "amd"},
            engine={"name": "vllm", "gpu_memory_utilization": 0.85},
            workload={
                "context_tokens": 4096,
                "concurrent_sequences": 3,
                "kv_cache_dtype": "fp8",
                "tensor_parallel": 2,
                "offload": {"fraction": 0.0, "moe_experts": True},
            },
        )
    )
    result = replace(run_estimate(request), offloaded_bytes=7)
    got = launch_config(
        request,
        result,
        hf_repo="a/b",
        gguf_repo="",
        weights_repo="a/b-AWQ",
        n_layers=32,
        offloaded_layers=0,
    )
    assert (got.weights_format, got.quant, got.native_dtype) == ("hf", "awq-int4", "bf16")
    assert (got.gpus, got.tensor_parallel, got.sequences, got.kv) == (2, 2, 3, "fp8")
    assert (got.gpu_memory_utilization, got.backend, got.weights_repo) == (0.85, "rocm", "a/b-AWQ")
    assert (got.offloaded_bytes, got.n_layers, got.moe_experts) == (7, 32, True)


def test_native_dtype_reads_the_quantization_config_first() -> None:
    # gpt-oss config.json: "quantization_config": {"quant_method": "mxfp4", ...}
    gpt_oss = {"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "mxfp4"}}
    assert native_dtype(gpt_oss) == "mxfp4"
    assert native_dtype({"torch_dtype": "float16"}) == "fp16"
    assert native_dtype({}) == ""


# --- the property: a command loads what was sized, or the engine is refused -----------------

FORMATS = st.one_of(
    st.sampled_from(GGUF_FILE_TYPES).map(lambda q: ("gguf", q)),
    st.sampled_from(HF_FORMATS).map(lambda q: ("hf", q)),
    st.sampled_from(MLX_QUANTS).map(lambda q: ("mlx", q)),
)


@settings(max_examples=300, deadline=None)
@given(
    engine=st.sampled_from(ENGINES),
    weights=FORMATS,
    backend=st.sampled_from(BACKENDS),
    kv=st.sampled_from((*LLAMA_KV_TYPES, "fp8")),
    context=st.integers(min_value=1024, max_value=262144),
    repos=st.booleans(),
)
def test_a_command_loads_what_was_sized_or_the_engine_is_refused(
    engine: str, weights: tuple[str, str], backend: str, kv: str, context: int, repos: bool
) -> None:
    fmt, quant = weights
    config = replace(
        GLM_AIR,
        weights_format=fmt,
        quant=quant,
        backend=backend,
        kv=kv,
        context_tokens=context,
        gguf_repo="unsloth/GLM-4.5-Air-GGUF" if repos else "",
        weights_repo="some-org/GLM-4.5-Air-X" if repos and fmt != "gguf" else "",
    )
    reason = refusal(engine=engine, weights_format=fmt, quant=quant, backend=backend, kv=kv)
    got = launch_commands(config)[engine]
    if engine in ("vllm", "sglang", "tensorrt-llm") and fmt == "gguf":
        assert reason  # never an HF repo served as if it were the sized GGUF
    if reason:
        assert (got.text, got.refused) == (None, reason)
        return
    if got.text is None:
        # No download recorded for the sized format: refused in words, never a made-up name.
        assert not repos
        assert got.refused is not None and "recorded in the catalog" in str(got.refused)
        return
    assert got.refused is None
    assert "<org>" not in got.text and "placeholder" not in got.text
    assert str(context) in got.text
    if fmt == "gguf":
        assert quant in got.text
    else:
        assert ".gguf" not in got.text


def test_a_server_batches_the_serving_points_users_when_the_page_sizes_one() -> None:
    # The page sizes 1 sequence; the estimate's serving point serves 64 users at its speed
    # and first-token time, so the servers cap their batch at 64, not 1, and say why.
    served = replace(GLM_AIR_BF16, server_sequences=64)
    assert "--max-num-seqs 64" in flat(text(served, "vllm"))
    assert "--max-running-requests 64" in flat(text(served, "sglang"))
    assert "--max_batch_size 64" in flat(text(served, "tensorrt-llm"))
    assert any("--max-num-seqs 64" in str(note) for note in command(served, "vllm").notes)
    # llama.cpp's slots stay the page's: each slot holds a whole context
    assert "-np 1" in flat(
        text(replace(served, weights_format="gguf", quant="Q4_K_M"), "llama.cpp")
    )
    # more sequences on the page than the serving point: the page's, and no note
    crowded = replace(GLM_AIR_BF16, sequences=128, server_sequences=64)
    assert "--max-num-seqs 128" in flat(text(crowded, "vllm"))
    assert not any("--max-num-seqs" in str(note) for note in command(crowded, "vllm").notes)


def test_launch_config_takes_the_serving_points_users() -> None:
    request = parse_request(llama_8b(weights={"format": "hf", "dtype": "bf16"}))
    result = run_estimate(request)
    repos = {"hf_repo": "a/b", "gguf_repo": "", "weights_repo": ""}
    served = replace(result, serving={"users": 48})
    got = launch_config(request, served, **repos, n_layers=32, offloaded_layers=0)
    assert (got.sequences, got.server_sequences) == (1, 48)
    alone = launch_config(request, replace(result, serving=None), **repos, n_layers=32,
                          offloaded_layers=0)  # fmt: skip
    assert alone.server_sequences == 1
