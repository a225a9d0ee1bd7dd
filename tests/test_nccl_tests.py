"""Reading nccl-tests' and rccl-tests' output as printed, and fitting it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import comms
from perfmodel.comms import LinkModel, allreduce_time, read_nccl_tests

#: nccl-tests 2.x as it prints a run on two GPUs (spacing as printed).
PRINTED = """\
# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  41210 on    node-a device  0 [0x18] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  41210 on    node-a device  1 [0x2a] NVIDIA A100-SXM4-80GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    10.51    0.00    0.00      0    10.32    0.00    0.00      0
         128            32     float     sum      -1    10.62    0.01    0.01      0    10.44    0.01    0.01      0
        2048           512     float     sum      -1    10.94    0.19    0.19      0    10.71    0.19    0.19      0
       32768          8192     float     sum      -1    12.31    2.66    2.66      0    12.03    2.72    2.72      0
      524288        131072     float     sum      -1    18.07   29.01   29.01      0    17.88   29.32   29.32      0
     8388608       2097152     float     sum      -1    62.13  135.02  135.02      0    61.90  135.52  135.52      0
   134217728      33554432     float     sum      -1   618.40  217.04  217.04      0   617.91  217.21  217.21      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 54.49
#
"""


def test_a_printed_table_reads_as_printed():
    sweep = read_nccl_tests(PRINTED, collective="all_reduce")
    assert sweep.collective == "allreduce" and sweep.ranks == 2  # the two '#  Rank' lines
    assert sweep.sizes == (8, 128, 2048, 32768, 524288, 8388608, 134217728)
    assert sweep.times[0] == pytest.approx(10.51e-6) and sweep.times[-1] == pytest.approx(618.4e-6)
    assert sweep.in_place_times[-1] == pytest.approx(617.91e-6)
    assert sweep.bus_bandwidths[-1] == pytest.approx(217.04e9)
    fit = sweep.fit()
    assert fit.ranks == 2 and 1e-6 < fit.latency < 20e-6 and 150e9 < fit.bandwidth < 300e9
    assert sweep.fit(in_place=True).bandwidth == pytest.approx(fit.bandwidth, rel=0.01)
    assert "allreduce" in repr(sweep) and "7" in repr(sweep)


def test_old_versions_rccl_and_in_place_na_read_too():
    old = """\
# Collective test starting: all_gather_perf
#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error
     1048576        32768     float    40.00   26.21   22.94  0e+00    41.00   25.57   22.38  0e+00
    16777216       524288     float   200.00   83.89   73.40  0e+00   201.00   83.47   73.04  0e+00
"""
    sweep = read_nccl_tests(old)
    # no rank lines: busbw/algbw = (p-1)/p = 0.875 gives 8 ranks
    assert sweep.collective == "allgather" and sweep.ranks == 8
    na = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576         65536     float    none      -1    30.00   34.95   30.58      0      N/A     N/A     N/A    N/A
    67108864       4194304     float    none      -1   900.00   74.57   65.25      0      N/A     N/A     N/A    N/A
"""
    sweep = read_nccl_tests(na, collective="alltoall", ranks=8)
    assert sweep.in_place_times == (None, None) and sweep.ranks == 8
    with pytest.raises(ValueError, match="fitting needs two"):
        sweep.fit(in_place=True)


def test_a_table_written_by_the_model_fits_back_to_the_model():
    truth = LinkModel(bandwidth=180e9, latency=6e-6)
    lines = ["# Collective test starting: all_reduce_perf"]
    lines += [f"#  Rank {r} Group 0 Pid 1 on node device {r} [0x00] GPU" for r in range(8)]
    for k in range(3, 31, 3):
        n = 2**k
        t = allreduce_time(n, 8, truth) * 1e6
        alg = n / (t * 1e-6) / 1e9
        lines.append(f"{n} {n // 4} float sum -1 {t:.4f} {alg:.4f} {alg * 1.75:.4f} 0 "
                     f"{t:.4f} {alg:.4f} {alg * 1.75:.4f} 0")  # fmt: skip
    fit = read_nccl_tests("\n".join(lines)).fit()
    assert math.isclose(fit.latency, truth.latency, rel_tol=1e-3)
    assert math.isclose(fit.bandwidth, truth.bandwidth, rel_tol=1e-3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**34), min_size=1, max_size=12, unique=True),
       st.sampled_from(sorted(comms.NCCL_TESTS)))  # fmt: skip
def test_any_printed_sweep_reads_back_its_numbers_in_order(sizes, collective):
    rows = [f"{n} {max(n // 4, 0)} float sum 0 {1 + n / 1e5:.2f} 1.00 1.00 0 {2 + n / 1e5:.2f} "
            f"1.00 1.00 0" for n in sorted(sizes)]  # fmt: skip
    sweep = read_nccl_tests("\n".join(rows), collective=collective, ranks=4)
    assert list(sweep.sizes) == sorted(sizes)
    assert all(b > a for a, b in zip(sweep.times, sweep.in_place_times, strict=True))


def test_lines_that_do_not_read_are_refused_by_number():
    header = "# Collective test starting: all_reduce_perf\n"
    row = "1048576 262144 float sum -1 12.00 87.38 87.38 0 11.90 88.12 88.12 0"
    with pytest.raises(ValueError, match=r"line 2 .* needs 13 columns .* has 9"):
        read_nccl_tests(header + "1048576 262144 float sum -1 12.00 87.38 87.38 0", ranks=2)
    with pytest.raises(ValueError, match=r"line 2 .*'time' must be a bare number .*'12.00us'"):
        read_nccl_tests(header + row.replace("12.00", "12.00us", 1), ranks=2)
    with pytest.raises(ValueError, match=r"line 1 .* does not price 'sendrecv'"):
        read_nccl_tests("# Collective test starting: sendrecv_perf\n" + row, ranks=2)
    with pytest.raises(ValueError, match="not a collective nccl-tests runs"):
        read_nccl_tests(row, collective="allsort", ranks=2)
    with pytest.raises(ValueError, match="line 1 .* times allreduce, not allgather"):
        read_nccl_tests(header + row, collective="all_gather", ranks=2)
    with pytest.raises(ValueError, match="no row of sizes and times"):
        read_nccl_tests(header)
    with pytest.raises(ValueError, match="does not say which collective"):
        read_nccl_tests(row, ranks=2)
    with pytest.raises(ValueError, match="give `ranks=`"):
        read_nccl_tests("# Collective test starting: broadcast_perf\n" + row.replace("sum", "none"))
    with pytest.raises(TypeError, match="`table` must be the text"):
        read_nccl_tests(b"bytes")
    with pytest.raises(ValueError, match="empty"):
        read_nccl_tests("  \n")
    with pytest.raises(ValueError, match="ranks"):
        read_nccl_tests(header + row, ranks=1)
    # other programs' log lines are skipped
    assert read_nccl_tests("NCCL INFO Bootstrap\n" + header + row, ranks=2).sizes == (1048576,)


def test_the_published_sweeps_are_cited_split_by_id_and_read_as_printed():
    import hashlib
    import sys
    from importlib import resources

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    folder = resources.files("perfmodel") / "data" / "nccl_sweeps"
    index = tomllib.loads((folder / "index.toml").read_text("utf-8"))["sweep"]
    assert len(index) >= 10 and len({s["kind"] for s in index}) >= 5
    assert len({s["id"] for s in index}) == len(index)
    for entry in index:
        digest = int(hashlib.sha256(entry["id"].encode()).hexdigest(), 16)
        assert entry["split"] == ("calibration" if digest % 2 == 0 else "held-out"), entry["id"]
        assert entry["source"] and entry["url"].startswith("https://")
        text = (folder / entry["file"]).read_text("utf-8")
        sweep = read_nccl_tests(text, collective=entry["collective"])
        assert sweep.ranks == entry["gpus"], entry["id"]
        # one process drives every GPU of a node (-g 8), or one each (MPI, -g 1); unknown only
        # where the header line that says so was not printed
        if "nGpus" in text:
            assert sweep.gpus_per_thread in (1, entry["gpus_per_node"]), entry["id"]
        else:
            assert sweep.gpus_per_thread is None, entry["id"]
        assert len(sweep.sizes) >= 10 and sweep.sizes[-1] >= 2**26, entry["id"]


def test_what_users_paste_reads_and_what_cannot_be_read_says_so():
    header = "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
    row = "1048576 262144 float sum -1 12.00 87.38 152.92 0 11.90 88.12 154.21 0"
    # checking off (-c 0): N/A in both error columns; a launcher's prefix on every line; log
    # lines from hosts whose names start with a digit
    unchecked = row.replace(" 0 11.90", " N/A 11.90").removesuffix(" 0") + " N/A"
    paste = "\n".join(["10-0-1-5:123:123 [0] NCCL INFO Bootstrap", "[1,0]<stdout>:" + header,
                       "[1,0]<stdout>:" + unchecked, "0: " + row.replace("1048576 262144",
                       "2097152 524288")])  # fmt: skip
    sweep = read_nccl_tests(paste, collective="all_reduce")
    assert sweep.sizes == (1048576, 2097152) and sweep.ranks == 8  # 152.92/87.38 = 2(p-1)/p
    # two runs in one paste, or several types, are refused where the second starts
    with pytest.raises(ValueError, match="line 3 .*second table"):
        read_nccl_tests(header + row + "\n" + header + row, collective="all_reduce")
    with pytest.raises(ValueError, match="line 2 .*second run"):
        read_nccl_tests(row + "\n" + row.replace("1048576 262144", "8 2"), collective="all_reduce",
                        ranks=7)  # fmt: skip
    with pytest.raises(ValueError, match="line 2 .*several types"):
        read_nccl_tests(row + "\n" + row.replace("float", "half").replace("1048576", "2097152"),
                        collective="all_reduce", ranks=7)  # fmt: skip
    # a repeated rank list counts its ranks once
    ranks = "".join(f"#  Rank {r} Group 0 Pid 1 on host device {r} [0x1] GPU\n" for r in range(8))
    assert read_nccl_tests(ranks + ranks + row, collective="all_reduce").ranks == 8
    # a ratio that fits no rank count asks for ranks instead of guessing or dividing by zero
    with pytest.raises(ValueError, match="give `ranks=`"):
        read_nccl_tests(row.replace("152.92", "174.76").replace("154.21", "176.24"),
                        collective="all_reduce")  # fmt: skip
    big = 2**30
    for p in (256, 512, 1024):  # rank counts at scale, from two-decimal bandwidths
        alg = 123.45
        line = f"{big} {big // 4} float sum -1 8697.90 {alg:.2f} {alg * 2 * (p - 1) / p:.2f} 0"
        line += f" 8697.90 {alg:.2f} {alg * 2 * (p - 1) / p:.2f} 0"
        with pytest.raises(ValueError, match="give `ranks=`"):  # p and p + 1 print alike
            read_nccl_tests(line, collective="all_reduce")
        assert read_nccl_tests(line, collective="all_reduce", ranks=p).ranks == p
    with pytest.raises(TypeError, match="collective"):
        read_nccl_tests(row, collective=1)
    sweep = read_nccl_tests(row + "\n" + row.replace("1048576 262144", "2097152 524288"),
                            collective="all_reduce", ranks=8)  # fmt: skip
    with pytest.raises(ValueError, match="smallest"):
        sweep.fit(smallest=-1)
    with pytest.raises(TypeError, match="smallest"):
        sweep.fit(smallest="1k")
    broadcast = read_nccl_tests(row.replace("sum", "none") + "\n" + row.replace("sum", "none")
                                .replace("1048576 262144", "2097152 524288"),
                                collective="broadcast", ranks=8)  # fmt: skip
    with pytest.raises(ValueError, match="pipelined ring"):
        broadcast.fit()
