import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.factors import SpeedFactors
from estimator.speed import (
    DecodeWork,
    Device,
    Parallelism,
    allreduce_seconds,
    decode_speed,
    device_class_for,
    expert_coverage,
    prefill_flops_per_token,
    prefill_speed,
    ttft_seconds,
)
from estimator.units import Range

FACTORS = SpeedFactors(
    group="test",
    bandwidth_share=0.8,
    decode_overhead_s=0.002,
    moe_decode_overhead_s=0.0,
    decode_mfu=0.5,
    prefill_mfu=0.4,
    decode_ratio_low=0.9,
    decode_ratio_high=1.1,
    prefill_ratio_low=0.8,
    prefill_ratio_high=1.25,
)
WORK = DecodeWork(weight_bytes_per_token=4e9, params_active=8e9)
DEVICE = Device(bandwidth_gbps=1000, fp16_tflops=100)


def decode(work=WORK, device=DEVICE, **kw):
    return decode_speed(work, device, engine="llama.cpp", backend="cuda", factors=FACTORS, **kw)


def test_it_adds_memory_compute_and_overhead_per_step():
    # memory 4e9 / (1e12 x 0.8) = 5 ms; compute 2 x 8e9 / (1e14 x 0.5) = 0.32 ms; +2 ms
    speed = decode(output_tokens=2)
    assert speed.step_s == pytest.approx(7.32e-3)
    assert speed.per_sequence_tokens_per_s.estimate == pytest.approx(1 / 7.32e-3)
    assert speed.per_sequence_tokens_per_s.low == pytest.approx(0.9 / 7.32e-3)
    assert speed.memory_bound


def test_it_reads_kv_at_the_mean_depth():
    work = DecodeWork(weight_bytes_per_token=4e9, params_active=8e9, kv_bytes_per_token=131072)
    # depth 1000 + 1000/2 = 1500 tokens x 131072 B = 0.197 GB more to read
    slow = decode(work, prompt_tokens=1000, output_tokens=1000)
    assert slow.step_s == pytest.approx(7.32e-3 + 1500 * 131072 / 0.8e12)


def test_it_splits_bytes_over_tensor_parallel_devices_and_pays_allreduces():
    work = DecodeWork(weight_bytes_per_token=4e9, params_active=8e9, n_layers=32, hidden_size=4096)
    par = Parallelism(n_devices=2, mode="tensor", interconnect_gbps=25, link_latency_s=25e-6)
    # memory 2.5 ms, compute 0.16 ms, 64 ring all-reduces over 2 devices:
    # 2 (N-1) = 2 steps x 25 us + 2 (N-1)/N = 1 x 8192 B / 25 GB/s
    comm = 64 * (2 * 25e-6 + 8192 / 25e9)
    assert decode(work, parallelism=par, output_tokens=2).step_s == pytest.approx(
        2.5e-3 + 0.16e-3 + comm + 2e-3
    )


def test_ring_allreduce_latency_grows_with_devices_on_pcie_but_not_on_nvlink():
    # 8 GPUs on PCIe: 2 x 7 = 14 ring steps x 25 us = 350 us + 2 x 7/8 x 8192 B / 25 GB/s
    pcie = Parallelism(n_devices=8, mode="tensor", interconnect_gbps=25, link_latency_s=25e-6)
    assert allreduce_seconds(8192, pcie) == pytest.approx(14 * 25e-6 + 1.75 * 8192 / 25e9)
    # NVLink class (>= 100 GB/s): one-shot custom kernels, 10 us whatever N (sglang PR
    # #2904: vLLM's custom all-reduce on 8 x H100, 4096 B: 9.3 us)
    nvlink = Parallelism(n_devices=8, mode="tensor", interconnect_gbps=450, link_latency_s=25e-6)
    assert allreduce_seconds(8192, nvlink) == pytest.approx(10e-6 + 1.75 * 8192 / 450e9)
    two = Parallelism(n_devices=2, mode="tensor", interconnect_gbps=450, link_latency_s=25e-6)
    assert allreduce_seconds(8192, two) == pytest.approx(10e-6 + 1.0 * 8192 / 450e9)


def test_it_does_not_add_bandwidth_for_a_layer_split():
    work = DecodeWork(weight_bytes_per_token=4e9, params_active=8e9, hidden_size=4096)
    par = Parallelism(n_devices=2, mode="layer", link_latency_s=25e-6)
    step = decode(work, parallelism=par, output_tokens=2).step_s
    assert step == pytest.approx(7.32e-3 + 25e-6 + 8192 / 25e9)


def test_it_reads_offloaded_weights_at_host_bandwidth():
    work = DecodeWork(weight_bytes_per_token=4e9, params_active=8e9, offloaded_bytes_per_token=1e9)
    with_host = decode(work, host_bandwidth_gbps=50, output_tokens=2).step_s
    # GPU part 3e9 / 0.8e12 = 3.75 ms; the host part alone at 50 GB/s is at least 20 ms
    assert with_host > 3.75e-3 + 0.32e-3 + 2e-3 + 1e9 / 50e9
    with pytest.raises(ValueError):
        decode(work)


def test_it_touches_more_experts_with_a_bigger_batch():
    assert expert_coverage(1, 32, 4) == pytest.approx(4 / 32)
    # 1 - (28/32)^8 = 0.6564
    assert expert_coverage(8, 32, 4) == pytest.approx(0.6564, abs=1e-4)


def test_it_counts_prefill_flops_with_attention():
    # 2 x 8e9 + 4 x 32 x 4096 x (0 + 512/2) = 16e9 + 134.2e6
    flops = prefill_flops_per_token(8e9, n_layers=32, attention_width=4096, prompt_tokens=512)
    assert flops == pytest.approx(16e9 + 4 * 32 * 4096 * 256)


def test_it_turns_tflops_into_prefill_speed_and_ttft():
    speed = prefill_speed(
        8e9, DEVICE, engine="llama.cpp", backend="cuda", prompt_tokens=1000, factors=FACTORS
    )
    # 100e12 x 0.4 / 16e9 = 2500 tok/s
    assert speed.tokens_per_s.estimate == pytest.approx(2500)
    ttft = ttft_seconds(1000, speed.tokens_per_s, Range(0.01, 0.008, 0.012))
    assert ttft.estimate == pytest.approx(0.4 + 0.01)
    assert ttft.low < ttft.estimate < ttft.high


def test_it_calls_hbm_gpus_datacenter_and_geforce_consumer():
    assert device_class_for("NVIDIA H100 PCIe 80GB", 2000) == "datacenter"
    assert device_class_for("NVIDIA RTX PRO 6000 Blackwell", 1792) == "consumer"
    assert device_class_for("Apple M2 Ultra", 800) == "consumer"


def test_it_uses_the_calibrated_factors_by_default():
    speed = decode_speed(WORK, DEVICE, engine="ollama", backend="CUDA")
    assert 0 < speed.per_sequence_tokens_per_s.low < speed.per_sequence_tokens_per_s.estimate
    assert speed.per_sequence_tokens_per_s.estimate < speed.per_sequence_tokens_per_s.high


positive = st.floats(1e8, 1e11)


@given(positive, st.floats(50, 5000), st.floats(1.01, 5), st.sampled_from(["cuda", "metal"]))
def test_it_is_never_slower_with_more_bandwidth(weights, bw, factor, backend):
    work = DecodeWork(weight_bytes_per_token=weights, params_active=weights)
    slow = decode_speed(work, Device(bw, 100), engine="llama.cpp", backend=backend)
    fast = decode_speed(work, Device(bw * factor, 100), engine="llama.cpp", backend=backend)
    assert fast.per_sequence_tokens_per_s.estimate >= slow.per_sequence_tokens_per_s.estimate


@given(st.floats(1e8, 1e12), st.floats(1, 2000), st.floats(1.01, 5), st.booleans())
def test_it_never_prefills_slower_with_more_tflops(params, tflops, factor, moe):
    def tps(t):
        return prefill_speed(
            params, Device(1000, t), engine="vllm", backend="cuda", prompt_tokens=512, is_moe=moe
        ).tokens_per_s.estimate

    assert tps(tflops * factor) >= tps(tflops)


@given(st.integers(1, 256), st.integers(1, 64), st.booleans())
def test_it_gains_aggregate_but_loses_per_sequence_speed_with_batch(batch, extra, moe):
    work = DecodeWork(
        weight_bytes_per_token=2e9,
        params_active=4e9,
        kv_bytes_per_token=50000,
        expert_bytes=10e9 if moe else 0,
        n_experts=32 if moe else 0,
        n_experts_per_token=4 if moe else 0,
        is_moe=moe,
    )
    small = decode(work, batch=batch, prompt_tokens=512)
    big = decode(work, batch=batch + extra, prompt_tokens=512)
    assert big.aggregate_tokens_per_s.estimate >= small.aggregate_tokens_per_s.estimate * 0.999999
    assert big.per_sequence_tokens_per_s.estimate <= small.per_sequence_tokens_per_s.estimate
