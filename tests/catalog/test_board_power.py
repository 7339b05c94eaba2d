"""The catalog sends a board's power with its device, for llama.cpp prefill's power cap
(estimator.speed.power_capped_tflops; tests/estimator/test_power_cap.py)."""

import pytest

from catalog.models import Accelerator
from catalog.sizing.requests import device


@pytest.mark.django_db
def test_the_catalog_sends_the_boards_power_per_device():
    # a 300 W single-chip board: the estimator's device gets 300 W; the speed device too
    card = Accelerator.objects.create(
        vendor="NVIDIA",
        name="Board",
        slug="board",
        memory_gb=48,
        bandwidth_gbps=960,
        fp16_tflops=364.25,
        int8_tops=728.5,
        tdp_w=300,
        curated=True,
    )
    assert device(card).tdp_w == 300
