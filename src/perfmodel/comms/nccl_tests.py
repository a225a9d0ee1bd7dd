"""Your own box: read the table nccl-tests (or rccl-tests) prints, and fit it.

NVIDIA's nccl-tests (``all_reduce_perf -b 8 -e 1G -f 2 -g 8`` and its siblings) print one row
per buffer size: the size in bytes, the element count, type, reduction and root, then the
time (µs), algorithm bandwidth and bus bandwidth (GB/s) and the error count, once for the
out-of-place call and once in place. :func:`read_nccl_tests` reads that text as printed
(header lines start with ``#``; versions without the ``root`` column and with ``error`` for
``#wrong`` read too; ``N/A`` for an in-place column is kept as missing) into a
:class:`Sweep`, whose :meth:`Sweep.fit` gives the link's latency and bandwidth for this
collective (:func:`perfmodel.comms.fit_alpha_beta`).

The ranks come from the ``#  Rank`` lines the tests print; without them, from the ratio of
bus to algorithm bandwidth at the largest size (``2(p-1)/p`` for an all-reduce), or from
``ranks=``. A line that does not read (missing columns, a unit written beside a number, a
collective the model does not price) is refused with its number and its text.

>>> table = '''
... # Collective test starting: all_reduce_perf
... #  Rank  0 Group  0 Pid  1 on node device  0 [0x18] NVIDIA H100 80GB HBM3
... #  Rank  1 Group  0 Pid  1 on node device  1 [0x2a] NVIDIA H100 80GB HBM3
... # size count type redop root time algbw busbw #wrong time algbw busbw #wrong
...   1048576   262144 float sum -1  12.00  87.38  87.38 0  11.90  88.12  88.12 0
... 134217728 33554432 float sum -1 400.00 335.54 335.54 0 399.00 336.38 336.38 0
... '''
>>> sweep = read_nccl_tests(table)
>>> sweep.collective, sweep.ranks, len(sweep.sizes)
('allreduce', 2, 2)
>>> round(sweep.fit().bandwidth / 1e9)    # one direction, GB/s
343
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from perfmodel._show import shown
from perfmodel._validate import choice, count, flag, non_negative
from perfmodel.comms.fit import AlphaBetaFit, fit_alpha_beta
from perfmodel.comms.links import COLLECTIVES, bus_factor
from perfmodel.units import format_quantity

__all__ = ["NCCL_TESTS", "Sweep", "read_nccl_tests"]

#: nccl-tests' collectives (the binary's name without ``_perf``) and the model's names for the
#: ones it prices.
NCCL_TESTS = {
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "reduce_scatter": "reduce_scatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "alltoall": "alltoall",
}
_UNPRICED = ("sendrecv", "gather", "scatter", "hypercube")
#: The columns of a row, with ``root`` (nccl-tests 2.x) and without (1.x).
_WITH_ROOT = ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
              "time", "algbw", "busbw", "#wrong")  # fmt: skip
_WITHOUT_ROOT = tuple(column for column in _WITH_ROOT if column != "root")
_BARE = tuple(column for column in _WITHOUT_ROOT if column != "redop")  # early all_gather
_LAYOUTS = {len(layout): layout for layout in (_WITH_ROOT, _WITHOUT_ROOT, _BARE)}
_STARTING = re.compile(r"Collective test starting:\s*(\S+?)(?:_perf)?(?:_mpi)?\s*$")
#: What launchers put before each line: ``mpirun --tag-output``'s ``[1,0]<stdout>:``, ``srun -l``'s
#: ``0:``.
_PREFIX = re.compile(r"^(\[\d+,\d+\]<std(?:out|err)>:|\d+:(?=\s))")
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


@dataclass(frozen=True, slots=True, repr=False)
class Sweep:
    """One collective timed over many buffer sizes, as nccl-tests printed it.

    Parameters
    ----------
    collective : str
        The model's name for it (see :data:`NCCL_TESTS`).
    ranks : int
        Ranks that took part, count.
    sizes : tuple of float
        Each rank's buffer, B.
    times : tuple of float
        The out-of-place time at each size, s.
    in_place_times : tuple of float or None
        The in-place time at each size, s (None where the test printed ``N/A``).
    bus_bandwidths : tuple of float
        The out-of-place bus bandwidth nccl-tests printed, B/s.
    gpus_per_thread : int or None
        GPUs each test thread drove (the header's ``nGpus``: ``-g 8`` in one process launches
        eight kernels a call, one after another), count; None where the header is missing.
    """

    collective: str
    ranks: int
    sizes: tuple[float, ...]
    times: tuple[float, ...]
    in_place_times: tuple[float | None, ...]
    bus_bandwidths: tuple[float, ...]
    gpus_per_thread: int | None = None

    def __repr__(self) -> str:
        return shown(
            "Sweep",
            collective=repr(self.collective),
            ranks=str(self.ranks),
            sizes=f"{format_quantity(self.sizes[0], 'B')} to "
            f"{format_quantity(self.sizes[-1], 'B')}",
            rows=str(len(self.sizes)),
            peak_busbw=format_quantity(max(self.bus_bandwidths), "B/s"),
        )

    def fit(
        self, *, algorithm: str | None = None, in_place: bool = False, smallest: float = 1.0
    ) -> AlphaBetaFit:
        """The latency and bandwidth that best explain the times (relative least squares).

        Parameters
        ----------
        algorithm : str, optional
            Whose formula the times follow (see :data:`perfmodel.comms.ALGORITHMS`).
        in_place : bool
            Fit the in-place times instead of the out-of-place ones.
        smallest : float
            Leave out sizes below this many bytes, B (the 0-byte rows some tests print).

        Returns
        -------
        AlphaBetaFit
            Latency (s) and one-direction bandwidth (B/s).
        """
        if self.collective in ("broadcast", "reduce"):
            raise ValueError(
                f"nccl-tests' {self.collective} is NCCL's pipelined ring, which the alpha-beta "
                "terms do not price; fit an all_reduce sweep of the same GPUs instead."
            )
        in_place = flag("in_place", in_place)
        smallest = non_negative("smallest", smallest)
        times = self.in_place_times if in_place else self.times
        kept = [(n, t) for n, t in zip(self.sizes, times, strict=True) if t and n >= smallest]
        if len(kept) < 2:
            raise ValueError(
                f"the sweep has {len(kept)} timed sizes of at least {smallest:g} B; fitting "
                f"needs two."
            )
        return fit_alpha_beta([n for n, _ in kept], [t for _, t in kept],
                              collective=self.collective, ranks=self.ranks,
                              algorithm=algorithm)  # fmt: skip


def _collective(name: object, where: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{where} must be a collective's name (got {name!r}).")
    bare = name.strip().casefold().removesuffix("_perf").removesuffix("_mpi")
    bare = bare.removesuffix("_perf")
    if bare in NCCL_TESTS:
        return NCCL_TESTS[bare]
    if bare in COLLECTIVES:
        return bare
    priced = ", ".join(NCCL_TESTS)
    if bare in _UNPRICED:
        raise ValueError(f"{where}: the model does not price {bare!r}; it prices {priced}.")
    raise ValueError(f"{where}: {name.strip()!r} is not a collective nccl-tests runs ({priced}).")


def _ranks_from_ratio(
    collective: str, rows: list[tuple[float, float, float | None, float, float]]
) -> int | None:
    """The rank count the printed bus factor implies, where every row agrees on one."""
    if collective in ("broadcast", "reduce"):
        return None
    sized = [(alg, bus) for *_, alg, bus in rows if alg >= 1e9]  # two decimals: 1% or better
    if not sized:
        return None
    alg, bus = max(sized)
    ratio = bus / alg
    if collective == "allreduce":
        guess = 2 / (2 - ratio) if ratio < 2 else 0.0
    else:
        guess = 1 / (1 - ratio) if ratio < 1 else 0.0
    if guess < 2:
        return None
    rounding = 0.006e9  # half a printed hundredth of a GB/s, both columns

    def agrees(p: int) -> bool:
        return all(abs(b - a * bus_factor(collective, p)) <= 3 * rounding for a, b in sized)

    fitting = [p for p in range(max(2, round(guess) - 2), round(guess) + 3) if agrees(p)]
    return fitting[0] if len(fitting) == 1 else None  # two that fit: the print cannot tell


def read_nccl_tests(
    table: str, *, collective: str | None = None, ranks: int | None = None
) -> Sweep:
    """Read nccl-tests' or rccl-tests' output as printed.

    Parameters
    ----------
    table : str
        The output, header lines (``#``) and all; other log lines are skipped.
    collective : str, optional
        Which collective it timed (``"all_reduce"`` or ``"allreduce"``...), where the text
        does not say (nccl-tests prints ``# Collective test starting: all_reduce_perf``).
    ranks : int, optional
        How many ranks took part, where the text's ``#  Rank`` lines do not say.

    Returns
    -------
    Sweep
        Sizes (B), times (s) out of place and in place, and bus bandwidths (B/s).

    Raises
    ------
    TypeError
        If ``table`` is not a string.
    ValueError
        Naming the line: a row with missing columns or a unit beside a number, a collective
        the model does not price, two different collectives, or no row at all.
    """
    if not isinstance(table, str):
        raise TypeError(
            f"`table` must be the text nccl-tests printed (got {type(table).__name__})."
        )
    if not table.strip():
        raise ValueError("`table` holds no nccl-tests output (got an empty string).")
    named = None if collective is None else _collective(collective, "`collective`")
    given = None if ranks is None else count("ranks", ranks, minimum=2)
    ranks_seen: set[int] = set()
    per_thread, header, kinds = None, None, set()
    rows: list[tuple[float, float, float | None, float, float]] = []
    for number, line in enumerate(table.splitlines(), 1):
        stripped = _PREFIX.sub("", line.strip()).strip()
        where = f"line {number} ({stripped[:60]!r})"
        if not stripped:
            continue
        if stripped.startswith("#"):
            started = _STARTING.search(stripped)
            if started:
                found = _collective(started.group(1), where)
                if named is not None and found != named:
                    raise ValueError(f"{where}: this output times {found}, not {named}.")
                named = found
            elif re.match(r"#\s*size\s+count\s+type\b", stripped):
                if header is not None and rows:
                    raise ValueError(f"{where}: a second table starts here; paste one run.")
                header = tuple(
                    "#wrong" if word == "error" else word for word in stripped[1:].split()
                )
                if header not in _LAYOUTS.values():
                    raise ValueError(f"{where}: not nccl-tests' columns ({' '.join(_WITH_ROOT)}).")
            elif rank := re.match(r"#\s+Rank\s+(\d+)\s", stripped):
                ranks_seen.add(int(rank.group(1)))
            elif match := re.search(r"nThread\s+\d+\s+nGpus\s+(\d+)", stripped):
                per_thread = int(match.group(1)) or None  # the header's own line only
            continue
        tokens = stripped.split()
        if len(tokens) < 3 or not (tokens[0].isdigit() and tokens[1].isdigit()):
            continue  # another program's log line (a host name may start with a digit)
        columns = header or _LAYOUTS.get(len(tokens))
        if columns is None or len(tokens) != len(columns):
            wanted = columns or _WITH_ROOT
            raise ValueError(
                f"{where}: a row needs {len(wanted)} columns ({' '.join(wanted)}); it has "
                f"{len(tokens)}."
            )
        for index, name in enumerate(columns):
            token = tokens[index]
            if name in ("type", "redop") or (token == "N/A" and (name == "#wrong" or index > 8)):
                continue
            if not _NUMBER.match(token):
                raise ValueError(
                    f"{where}: column {name!r} must be a bare number (units belong in the "
                    f"header: bytes, µs, GB/s); got {token!r}."
                )
        kinds.add(tuple(tokens[index] for index, name in enumerate(columns)
                        if name in ("type", "redop")))  # fmt: skip
        if len(kinds) > 1:
            raise ValueError(
                f"{where}: rows of several types or reductions (-d all, -o all); paste one."
            )
        if rows and float(tokens[0]) < rows[-1][0]:
            raise ValueError(f"{where}: the sizes start again; a second run starts here.")
        size, out_time = float(tokens[0]), float(tokens[columns.index("time")])
        algbw = float(tokens[columns.index("algbw")])
        busbw = float(tokens[columns.index("busbw")])
        second = len(columns) - 4
        in_time = None if tokens[second] == "N/A" else float(tokens[second])
        if not all(math.isfinite(v) and v >= 0 for v in (size, out_time, algbw, busbw)):
            raise ValueError(f"{where}: sizes, times and bandwidths must be non-negative.")
        rows.append((size, out_time * 1e-6, None if in_time is None else in_time * 1e-6,
                     algbw * 1e9, busbw * 1e9))  # fmt: skip
    if not rows:
        raise ValueError(
            "`table` has no row of sizes and times: paste the lines nccl-tests prints under "
            "its '#  size  count  type ...' header."
        )
    if named is None:
        raise ValueError(
            "the output does not say which collective it timed (no 'Collective test starting' "
            "line): give `collective=`, e.g. 'all_reduce'."
        )
    p = given or (len(ranks_seen) if len(ranks_seen) >= 2 else None)
    p = p or _ranks_from_ratio(named, rows)
    p = p or (per_thread if per_thread and per_thread >= 2 else None)
    if p is None:
        raise ValueError(
            "the output does not say how many ranks took part (no '#  Rank' lines, and the bus "
            "bandwidth does not imply it): give `ranks=`."
        )
    return Sweep(
        collective=choice("collective", named, COLLECTIVES),
        ranks=p,
        sizes=tuple(r[0] for r in rows),
        times=tuple(r[1] for r in rows),
        in_place_times=tuple(r[2] for r in rows),
        bus_bandwidths=tuple(r[4] for r in rows),
        gpus_per_thread=per_thread,
    )
