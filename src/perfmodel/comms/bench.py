"""Measure MPI collectives over message sizes and fit the link's latency and bandwidth.

Run it under any MPI, on one machine or a cluster; the command is the same::

    mpiexec -n 2 python -m perfmodel.comms.bench --quick
    mpiexec -n 16 -ppn 8 python -m perfmodel.comms.bench --json net.json --toml net.toml

Rank 0 prints a table and the fit, and with ``--toml`` writes a ``[[link]]`` entry that
``perfmodel.hardware.load`` reads, so every model in :mod:`perfmodel.comms` can be priced
on the network you measured. :func:`run` launches the same command from Python (a
notebook cannot itself run under ``mpiexec``) and reads its results back.

Work is bounded by iterations, not seconds: each size runs a fixed number of calls (about
32 MiB of traffic, at most 1000 calls), so a busy machine gives slower times, never a
different amount of work. Each repeat starts after a barrier and reports the slowest
rank's time per call, as nccl-tests do.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfmodel._validate import count, non_negative
from perfmodel.comms.fit import AlphaBetaFit, fit_alpha_beta
from perfmodel.measure.timing import clock

if TYPE_CHECKING:
    from perfmodel.hardware import Link

__all__ = [
    "BENCH_COLLECTIVES",
    "FULL_SIZES",
    "QUICK_SIZES",
    "BenchResult",
    "HeldOut",
    "iterations_for",
    "main",
    "mpiexec",
    "read_results",
    "run",
]

#: The MPI collectives measured, by the names :mod:`perfmodel.comms.collectives` uses.
BENCH_COLLECTIVES = ("allreduce", "allgather", "broadcast")
#: Sizes measured in a full run: 8 B to 512 KiB by factors of 4, then 1 to 128 MiB by factors
#: of 2 (well past a last-level cache); 256 MiB is held out of every fit.
FULL_SIZES = (*(8 * 4**k for k in range(9)), *(2**k for k in range(20, 28)))
FULL_HELD_OUT = 256 * 2**20
#: The quick run CI uses: five sizes, 16 MiB held out.
QUICK_SIZES = (8, 1024, 64 * 2**10, 2**20, 4 * 2**20)
QUICK_HELD_OUT = 16 * 2**20


def iterations_for(nbytes: int) -> int:
    """Calls per repeat for a buffer of ``nbytes``: about 32 MiB of traffic, 3 to 1000 calls.

    Parameters
    ----------
    nbytes : int
        Each rank's buffer, B.

    Returns
    -------
    int
        Calls, count.

    Examples
    --------
    >>> iterations_for(8), iterations_for(2**20), iterations_for(64 * 2**20)
    (1000, 32, 3)
    """
    nbytes = count("nbytes", nbytes, minimum=0)
    return max(3, min(1000, 2**25 // max(nbytes, 1)))


def _elements(nbytes: int, ranks: int) -> int:
    """float64 elements for a buffer near ``nbytes`` that splits evenly over the ranks."""
    return max(ranks, round(nbytes / 8 / ranks) * ranks)


def _time_one(comm: Any, collective: str, nbytes: int, repeats: int) -> tuple[int, list[float]]:
    """The bytes actually moved and the slowest rank's seconds per call, per repeat."""
    import numpy as np
    from mpi4py import MPI

    ranks = comm.Get_size()
    elements = _elements(nbytes, ranks)
    whole = np.ones(elements)
    out = np.empty_like(whole)
    share = np.ones(elements // ranks)
    calls: dict[str, Callable[[], Any]] = {
        "allreduce": lambda: comm.Allreduce(whole, out, op=MPI.SUM),
        "allgather": lambda: comm.Allgather(share, out),
        "broadcast": lambda: comm.Bcast(whole, root=0),
    }
    call = calls[collective]
    loops = iterations_for(elements * 8)
    call()  # warm-up: connections, registration, first-touch pages
    samples = []
    for _ in range(repeats):
        comm.Barrier()
        start = clock()
        for _ in range(loops):
            call()
        mine = (clock() - start) / loops
        samples.append(comm.allreduce(mine, op=MPI.MAX))
    return elements * 8, samples


def _measure(sizes: Sequence[int], held_out: int, repeats: int) -> dict[str, Any] | None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    results: dict[str, Any] = {}
    for collective in BENCH_COLLECTIVES:
        rows = [_time_one(comm, collective, n, repeats) for n in (*sizes, held_out)]
        results[collective] = {
            "sizes": [n for n, _ in rows[:-1]],
            "times": [samples for _, samples in rows[:-1]],
            "held_out": {"size": rows[-1][0], "times": rows[-1][1]},
        }
    if comm.Get_rank() != 0:
        return None
    return {
        "ranks": comm.Get_size(),
        "library": MPI.Get_library_version().splitlines()[0].strip(),
        "host": platform.node(),
        "repeats": repeats,
        "results": results,
    }


@dataclass(frozen=True, slots=True)
class HeldOut:
    """A size kept out of the fit: what the fit predicts for it, and what was measured.

    Parameters
    ----------
    size : int
        The buffer held out, B.
    predicted_s : float
        The fit's time for it, s.
    measured_s : float
        The median measured time, s.
    """

    size: int
    predicted_s: float
    measured_s: float

    @property
    def error(self) -> float:
        """``predicted / measured - 1``."""
        return self.predicted_s / self.measured_s - 1


@dataclass(frozen=True, slots=True)
class BenchResult:
    """What one run of the benchmark measured and what it fitted, per collective.

    Parameters
    ----------
    ranks : int
        MPI ranks that took part, count.
    library : str
        The MPI library's version line.
    host : str
        The machine rank 0 ran on.
    fits : dict of str to AlphaBetaFit
        Each collective's fit.
    held_out : dict of str to HeldOut
        Each collective's held-out size, predicted and measured.
    raw : dict
        The benchmark's JSON, every repeat's time in s.
    unfitted : tuple of str
        The collectives left without a fit because their median times did not grow with
        the size (a busy machine: a link never moves more bytes in less time).
    """

    ranks: int
    library: str
    host: str
    fits: dict[str, AlphaBetaFit]
    held_out: dict[str, HeldOut]
    raw: dict[str, Any]
    unfitted: tuple[str, ...] = ()

    @property
    def noisy(self) -> tuple[str, ...]:
        """The collectives whose repeats disagree, at a size in their fit or the held-out
        one, by more than :data:`perfmodel.measure.timing.NOISY_SPREAD` of their median (the house
        rule for a busy machine): their fit and held-out error say more about the neighbours
        than about the link. The collectives left :attr:`unfitted` come last."""
        from perfmodel.measure.timing import Measurement

        def disagree(samples: Sequence[float]) -> bool:
            return len(samples) > 1 and Measurement(samples_s=tuple(samples), inner_loops=1).noisy

        noisy = []
        for collective, fit in self.fits.items():
            table = self.raw["results"][collective]
            fitted = set(fit.sizes)
            samples = [
                s for n, s in zip(table["sizes"], table["times"], strict=True) if n in fitted
            ]
            if any(disagree(s) for s in [*samples, table["held_out"]["times"]]):
                noisy.append(collective)
        return (*noisy, *self.unfitted)

    def link(self, name: str, *, collective: str = "allreduce") -> Link:
        """The ``collective``'s fit as a catalogue link, its source saying where it ran.

        Parameters
        ----------
        name : str
            The link's name.
        collective : str
            Which collective's fit to use; one of :data:`BENCH_COLLECTIVES`.

        Returns
        -------
        hardware.Link
            The fitted bandwidth (B/s) and latency (s) under that name.
        """
        fit = self.fits[collective]
        source = (f"measured with `python -m perfmodel.comms.bench` on {self.host}: "
                  f"{self.ranks} ranks, {self.library}")  # fmt: skip
        notes = f"fitted to {collective} times; rms error {fit.rms_relative_error:.1%}"
        return fit.link(name, kind="other", source=source, notes=notes)


def read_results(data: dict[str, Any], *, fit_from: float = 0) -> BenchResult:
    """Fit every collective in a benchmark's JSON (the median of its repeats at each size).

    Parameters
    ----------
    data : dict
        What ``--json`` writes: ranks, library, host, and per collective the sizes (B),
        every repeat's time (s) and the held-out size.
    fit_from : float
        The smallest size kept in the fit, B. On one machine the ranks talk through caches,
        which make mid-size messages faster than any one bandwidth explains, so fit above
        the last-level cache to predict large messages.

    Returns
    -------
    BenchResult
        The fits and their held-out checks; a collective whose median times do not grow
        with the size is left out of both and named in ``unfitted`` (a busy machine).

    Raises
    ------
    ValueError
        If ``fit_from`` leaves fewer than two measured sizes.
    """
    fit_from = non_negative("fit_from", fit_from)
    fits, held, unfitted = {}, {}, []
    for collective, table in data["results"].items():
        measured = zip(table["sizes"], table["times"], strict=True)
        rows = [(n, statistics.median(samples)) for n, samples in measured if n >= fit_from]
        if len({n for n, _ in rows}) < 2:
            raise ValueError(
                f"`fit_from` must leave at least two measured sizes (got {fit_from:g} bytes; "
                f"the largest measured is {max(table['sizes'])})."
            )
        sizes, times = [n for n, _ in rows], [t for _, t in rows]
        try:
            fit = fit_alpha_beta(sizes, times, collective=collective, ranks=data["ranks"])
        except ValueError:
            if all(a < b for a, b in zip(times, times[1:], strict=False)):
                raise  # the times grow: the fault is the data's, not the machine's
            unfitted.append(collective)
            continue
        fits[collective] = fit
        out = table["held_out"]
        held[collective] = HeldOut(
            out["size"], fit.predict(out["size"]), statistics.median(out["times"])
        )
    return BenchResult(
        data["ranks"], data["library"], data["host"], fits, held, data, tuple(unfitted)
    )


def _report(result: BenchResult) -> str:
    lines = [f"{result.ranks} ranks, {result.library}"]
    for collective, fit in result.fits.items():
        out = result.held_out[collective]
        lines.append(
            f"{collective:>10}: latency {fit.latency * 1e6:8.2f} us, bandwidth "
            f"{fit.bandwidth / 1e9:7.2f} GB/s, rms error {fit.rms_relative_error:6.1%}; "
            f"held-out {out.size / 2**20:.0f} MiB predicted {out.predicted_s * 1e3:.2f} ms, "
            f"measured {out.measured_s * 1e3:.2f} ms ({out.error:+.1%})"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: run under ``mpiexec``; rank 0 reports and writes the files.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The exit status: 0.
    """
    parser = argparse.ArgumentParser(prog="python -m perfmodel.comms.bench",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="five sizes, 3 repeats (CI)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per size")
    parser.add_argument(
        "--largest",
        type=int,
        default=None,
        metavar="BYTES",
        help="the largest size fitted (a full run's sizes up to it); twice it is held out",
    )
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--toml", type=Path, help="write the all-reduce fit as a [[link]] here")
    parser.add_argument("--name", default="my network", help="the link's name in --toml")
    parser.add_argument(
        "--fit-from",
        type=float,
        default=0,
        metavar="BYTES",
        help="fit only sizes of at least BYTES (above the caches)",
    )
    args = parser.parse_args(argv)
    sizes, held_out = (QUICK_SIZES, QUICK_HELD_OUT) if args.quick else (FULL_SIZES, FULL_HELD_OUT)
    if args.largest is not None:
        sizes = tuple(n for n in FULL_SIZES if n <= args.largest)
        if len(sizes) < 2:
            parser.error(f"--largest must be at least {FULL_SIZES[1]} bytes (got {args.largest})")
        held_out = 2 * sizes[-1]
    repeats = args.repeats or (3 if args.quick else 5)
    if repeats < 1:
        parser.error(f"--repeats must be a positive integer (got {repeats})")
    data = _measure(sizes, held_out, repeats)
    if data is None:  # every rank but 0
        return 0
    result = read_results(data, fit_from=args.fit_from)
    print(_report(result))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1), encoding="utf-8")
    if args.toml:
        from perfmodel.hardware import to_toml

        args.toml.write_text(to_toml(result.link(args.name)), encoding="utf-8")
    return 0


def mpiexec() -> str:
    """The ``mpiexec`` beside this Python (the ``mpich`` wheel puts it there), or on PATH.

    Returns
    -------
    str
        Its path.

    Raises
    ------
    ImportError
        If the ``mpi`` extra is missing or no ``mpiexec`` is found.
    """
    from perfmodel._extras import require

    require("mpi", "mpi4py", feature="the MPI benchmark")
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.is_file() else shutil.which("mpiexec")
    if found is None:
        raise ImportError(
            "the MPI benchmark needs an `mpiexec` beside this Python or on PATH: "
            "pip install 'perfmodel[mpi]' (the mpich wheel brings one), or install any MPI."
        )
    return found


def run(
    ranks: int = 2,
    *,
    quick: bool = True,
    repeats: int | None = None,
    largest: int | None = None,
    fit_from: float = 0,
    timeout_s: float = 300,
) -> BenchResult:
    """Run the benchmark under ``mpiexec -n ranks`` on this machine and fit its results.

    Parameters
    ----------
    ranks : int
        MPI ranks, count (at least 2).
    quick : bool
        Five sizes (:data:`QUICK_SIZES`) rather than the full sweep.
    repeats : int, optional
        Repeats per size, count; 3 quick or 5 full by default.
    largest : int, optional
        The full run's sizes up to this many B, twice it held out.
    fit_from : float
        The smallest size kept in the fit, B (see :func:`read_results`).
    timeout_s : float
        A safety net for the whole run, s; the work itself is bounded by its calls.

    Returns
    -------
    BenchResult
        The fits and their held-out checks.

    Raises
    ------
    RuntimeError
        When no MPI is installed, or the run fails (its error output is in the message).
    """
    ranks = count("ranks", ranks, minimum=2)
    extra = [] if repeats is None else ["--repeats", str(count("repeats", repeats))]
    if largest is not None:
        extra += ["--largest", str(count("largest", largest))]
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "bench.json"
        command = [mpiexec(), "-n", str(ranks), sys.executable, "-m", "perfmodel.comms.bench",
                   "--json", str(out), *(["--quick"] if quick else []), *extra]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
        if done.returncode != 0 or not out.is_file():
            raise RuntimeError(
                f"`{' '.join(command[:3])} ...` failed (exit {done.returncode}):\n"
                f"{done.stderr.strip()[-2000:]}"
            )
        return read_results(json.loads(out.read_text(encoding="utf-8")), fit_from=fit_from)


if __name__ == "__main__":
    raise SystemExit(main())
