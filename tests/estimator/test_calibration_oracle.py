"""The oracle diagnostics' pure helpers (estimator/calibration/oracle.py), on hand-made rows;
the module's whole run refits the model (about 40 s) and is not run here."""

from __future__ import annotations

import pytest

from estimator.calibration.oracle import ORACLES, Row, oracle_errors, repeat_spread


def _row(device: str, model: str, measured: float, in_sample: float) -> Row:
    return Row(
        kind="decode",
        device=device,
        backend="cuda",
        model=model,
        quant="Q4_K_M",
        test=(512, 128, 1),
        measured=measured,
        held=in_sample,
        in_sample=in_sample,
    )


ROWS = [
    _row("A", "m1", measured=100.0, in_sample=50.0),  # measured / in-sample 2.0
    _row("A", "m2", measured=60.0, in_sample=30.0),  # 2.0
    _row("B", "m1", measured=90.0, in_sample=100.0),  # 0.9
    _row("B", "m2", measured=110.0, in_sample=100.0),  # 1.1
    _row("C", "m1", measured=40.0, in_sample=80.0),  # 0.5, alone on its device
]


def test_a_factor_per_device_corrects_a_device_whose_rows_agree() -> None:
    # A: median ratio 2.0 -> predictions 50 x 2 = 100 and 30 x 2 = 60, both exact.
    # B: median of 0.9 and 1.1 = 1.0 -> both predicted 100, off by 10 tok/s each (the
    #    half-spread around the median): 10 / 90 = 11.11 % and 10 / 110 = 9.09 %.
    # C: a group of one row takes its own ratio 0.5 -> 80 x 0.5 = 40, error 0.
    errors = oracle_errors(ROWS, ORACLES["oracle dev"])
    assert errors == pytest.approx([0.0, 0.0, 100 / 9, 100 / 11, 0.0])


def test_finer_groups_leave_no_more_error() -> None:
    # Per device and model every group here has one row: all errors 0.
    assert oracle_errors(ROWS, ORACLES["oracle dev+model"]) == pytest.approx([0.0] * 5)


def test_the_repeat_spread_counts_only_groups_of_two_rows_or_more() -> None:
    # Same device/backend/model/quant/test: A-m1 at 100 and 120 (median 110, 9.09 % each);
    # the other rows of ROWS differ in device or model and are alone in their groups.
    rows = [*ROWS, _row("A", "m1", measured=120.0, in_sample=50.0)]
    spread, groups = repeat_spread(rows, lambda r: (r.device, r.model, r.quant, r.test))
    assert groups == 1
    assert spread == pytest.approx([100 / 11, 100 / 11])
