"""Formatting of SI quantities (expected strings checked by hand)."""

import pytest

from perfmodel.units import format_quantity, format_rate


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (3.35e12, "B/s", "3.35 TB/s"),
        (6e12, "FLOP/s", "6 TFLOP/s"),
        (2.5e-5, "s", "25 µs"),
        (999.9, "B", "1 kB"),  # rounds up across a prefix boundary
        (1.0, "s", "1 s"),
        (-4e6, "B", "-4 MB"),
        (0.0, "s", "0 s"),
        (float("inf"), "s", "inf s"),
    ],
)
def test_format_quantity(value, unit, text):
    assert format_quantity(value, unit) == text


def test_format_rate_defaults_to_flops():
    assert format_rate(142e9) == "142 GFLOP/s"


def test_digits():
    assert format_quantity(1234567, "B", digits=5) == "1.2346 MB"


@pytest.mark.parametrize("bad", ["3", None, True])
def test_rejects_non_numbers(bad):
    with pytest.raises(TypeError, match="`value` must be a number"):
        format_quantity(bad, "s")


def test_rejects_zero_digits():
    with pytest.raises(ValueError, match="`digits` must be a positive integer"):
        format_quantity(1.0, "s", digits=0)
