"""The transfer-time model (values worked by hand)."""

import math

import pytest

from perfmodel.metrics import transfer_time_s


def test_bytes_over_bandwidth():
    # 10 MB at 400 GB/s: 1e7 / 4e11 = 2.5e-5 s.
    assert math.isclose(transfer_time_s(10e6, 400e9), 2.5e-5)


def test_latency_adds():
    assert math.isclose(transfer_time_s(1e9, 1e9, latency_s=1e-3), 1.001)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nbytes": -1, "bandwidth_bytes_per_s": 1e9}, "`nbytes` must be a non-negative"),
        ({"nbytes": 1, "bandwidth_bytes_per_s": 0}, "`bandwidth_bytes_per_s` must be a positive"),
        ({"nbytes": 1, "bandwidth_bytes_per_s": float("nan")}, "must be a positive finite"),
        ({"nbytes": "1", "bandwidth_bytes_per_s": 1e9}, "`nbytes` must be a number"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        transfer_time_s(**kwargs)
