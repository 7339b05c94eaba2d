"""catalog.limits: bounded JSON for uploads, feeds and imported configs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalog.limits import LimitError, json_loads_bounded


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
        ('{"a": NaN}', "NaN is not a number JSON allows"),
        ('{"a": 1e999999}', "out of range"),
        ('{"a": "x\x00y"}', "NUL byte"),
        ("{", "not valid JSON"),
        ("x" * 20_001, "over the 20,000-byte limit"),
    ],
)
def test_hostile_input_is_a_limit_error_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(LimitError, match=message):
        json_loads_bounded(text, max_bytes=20_000)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"a": "[" * 200})
    assert json_loads_bounded(text, max_bytes=10_000) == {"a": "[" * 200}


def test_bytes_must_be_utf8() -> None:
    with pytest.raises(LimitError, match="not UTF-8"):
        json_loads_bounded(b"\xff\xfe", max_bytes=100)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_any_finite_shallow_json_round_trips(value: object) -> None:
    text = json.dumps(value)
    assert json_loads_bounded(text, max_bytes=len(text.encode()) + 1) == value


def test_an_unpaired_surrogate_is_a_limit_error_and_a_pair_is_text() -> None:
    for text in ('{"sku": "\\ud800"}', '{"\\udfff": 1}', '[["ok", "a\\udc00b"]]'):
        with pytest.raises(LimitError, match="unpaired surrogate"):
            json_loads_bounded(text, max_bytes=20_000)
    assert json_loads_bounded('{"sku": "\\ud83d\\ude00"}', max_bytes=100) == {"sku": "😀"}
