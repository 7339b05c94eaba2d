import pytest

from estimator.finetune import (
    NF4_DQ_BITS_PER_PARAM,
    activation_bytes,
    full_finetune_memory,
    llama_linear_shapes,
    lora_adapter_params,
    lora_memory,
    qlora_memory,
)

LLAMA_31_8B_PARAMS = 8_030_261_248  # model_configs.csv
LLAMA_SHAPES = llama_linear_shapes(4096, 14336, 32, 8, 128)


def test_it_needs_16_bytes_per_param_for_full_adamw():
    mem = full_finetune_memory(LLAMA_31_8B_PARAMS, activations=0)
    # 8.03e9 x (2 + 4 + 2 + 8) = 128.48 GB before activations
    assert mem.total_bytes == pytest.approx(128.484e9, rel=1e-4)


def test_it_needs_18_bytes_with_fp32_grads_and_10_with_8bit_adam():
    assert full_finetune_memory(1e9, 0, fp32_grads=True).total_bytes == pytest.approx(18e9)
    # 2 + 4 + 2 + 2 = 10 bytes per parameter
    assert full_finetune_memory(1e9, 0, eight_bit_adam=True).total_bytes == pytest.approx(10e9)


def test_it_counts_lora_params_of_llama_8b_rank_16():
    # per layer 16 x [(4096+4096) x 2 + (4096+1024) x 2 + (4096+14336) x 3] = 1,310,720
    # x 32 layers = 41,943,040 (what PEFT prints for r=16 on all linear layers)
    assert lora_adapter_params(16, LLAMA_SHAPES, 32) == 41_943_040


def test_it_targets_only_the_named_modules():
    # q and v only: 16 x (8192 + 5120) x 32 = 6,815,744
    assert lora_adapter_params(16, LLAMA_SHAPES, 32, ("q", "v")) == 6_815_744


def test_it_uses_4_127_bits_for_nf4_double_quant():
    assert pytest.approx(4.127, abs=1e-3) == NF4_DQ_BITS_PER_PARAM
    mem = qlora_memory(LLAMA_31_8B_PARAMS, 41_943_040, activations=0)
    # base 8.03e9 x 4.127 / 8 = 4.143 GB; adapter 41.9e6 x 16 B = 0.671 GB
    assert mem.weights_bytes == pytest.approx(4.1425e9 + 41_943_040 * 4, rel=1e-3)
    assert mem.total_bytes == pytest.approx(4.1425e9 + 41_943_040 * 16, rel=1e-3)


def test_it_keeps_the_lora_base_in_bf16():
    mem = lora_memory(LLAMA_31_8B_PARAMS, 0, 0)
    assert mem.weights_bytes == pytest.approx(2 * LLAMA_31_8B_PARAMS)
    assert mem.gradients_bytes == 0


def test_it_follows_korthikanti_for_activations():
    # s=2048, b=1, h=4096, a=32: sbh = 8,388,608; 34 + 5 x 32 x 2048 / 4096 = 114
    # per layer 956.3 MB; 32 layers = 30.60 GB
    full = activation_bytes(
        seq_len=2048, micro_batch=1, hidden=4096, n_heads=32, n_layers=32, flash_attention=False
    )
    assert full == pytest.approx(8_388_608 * 114 * 32)
    flash = activation_bytes(seq_len=2048, micro_batch=1, hidden=4096, n_heads=32, n_layers=32)
    assert flash == pytest.approx(8_388_608 * 34 * 32)
    ckpt = activation_bytes(
        seq_len=2048, micro_batch=1, hidden=4096, n_heads=32, n_layers=32, checkpointing=True
    )
    # 2 x sbh x 32 layers + one layer's 34 sbh
    assert ckpt == pytest.approx(8_388_608 * (64 + 34))
    assert ckpt < flash < full
