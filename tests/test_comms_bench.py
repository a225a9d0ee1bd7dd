"""The MPI benchmark, run for real: two local ranks under the mpich wheel's mpiexec."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from perfmodel import comms, hardware
from perfmodel.comms import bench

pytest.importorskip("mpi4py", reason="perfmodel's dependencies include mpi4py and mpich")


@pytest.fixture(scope="module")
def quick() -> bench.BenchResult:
    """One quick run (2 ranks, five sizes, 16 MiB held out) shared by the tests below."""
    return bench.run(2, quick=True)


def test_the_quick_run_measures_every_collective_at_every_size(quick):
    assert quick.ranks == 2 and "MPICH" in quick.library
    assert set(quick.fits) == set(bench.BENCH_COLLECTIVES)
    for collective, table in quick.raw["results"].items():
        # sizes are rounded to whole float64 elements that split evenly over the ranks
        assert table["sizes"] == [max(16, round(n / 16) * 16) for n in bench.QUICK_SIZES]
        assert all(len(samples) == 3 and min(samples) > 0 for samples in table["times"])
        assert quick.held_out[collective].size == bench.QUICK_HELD_OUT


def test_the_fit_is_a_real_link_that_prices_other_collectives(quick):
    fit = quick.fits["allreduce"]
    assert fit.bandwidth > 0 and fit.latency >= 0
    # the fit's own predictions are what the collectives module computes on its link
    for n in fit.sizes:
        assert fit.predict(n) == pytest.approx(comms.allreduce_time(n, 2, fit.model))
    link = quick.link("this machine, 2 ranks")
    assert link.kind == "other" and "perfmodel.comms.bench" in link.source
    assert hardware.Catalogue.from_toml(hardware.to_toml(link)).get_link(link.name) == link


def test_the_command_line_writes_json_and_a_catalogue_entry(tmp_path):
    out, toml = tmp_path / "bench.json", tmp_path / "net.toml"
    done = subprocess.run(
        [bench.mpiexec(), "-n", "2", sys.executable, "-m", "perfmodel.comms.bench", "--quick",
         "--json", str(out), "--toml", str(toml), "--name", "lab switch"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("held-out") == 3  # one report line per collective, from rank 0
    data = json.loads(out.read_text())
    assert data["ranks"] == 2 and set(data["results"]) == set(bench.BENCH_COLLECTIVES)
    link = hardware.load(toml).get_link("lab switch")
    assert link.bandwidth == pytest.approx(bench.read_results(data).fits["allreduce"].bandwidth)


def test_fit_from_keeps_only_the_large_messages(quick):
    large = bench.read_results(quick.raw, fit_from=2**20)
    assert large.fits["allreduce"].sizes == tuple(n for n in quick.fits["allreduce"].sizes
                                                  if n >= 2**20)  # fmt: skip
    with pytest.raises(ValueError, match="`fit_from`"):
        bench.read_results(quick.raw, fit_from=2**30)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="`ranks`"):
        bench.run(1)
    with pytest.raises(ValueError, match="`ranks`"):
        bench.run(2.5)
    with pytest.raises(ValueError, match="`repeats`"):
        bench.run(2, repeats=0)


def test_repeats_and_largest_set_what_is_measured():
    small = bench.run(2, quick=False, repeats=1, largest=2**20)
    table = small.raw["results"]["allreduce"]
    assert all(len(samples) == 1 for samples in table["times"])
    assert max(table["sizes"]) == 2**20 and table["held_out"]["size"] == 2**21
