"""Scale with more processors: Amdahl's and Gustafson's laws, and the serial fraction measured.

Two questions, two laws (Sreepathi Pai, *Making systems fast and scalable*):

* **Strong scaling**, the same problem on more processors. If a fraction ``α`` of the work
  can run in parallel, ``p`` processors give :func:`amdahl_speedup`
  ``1 / ((1 - α) + α / p)``, never more than ``1 / (1 - α)``: a 20% serial portion caps
  the speedup at 5, however many processors.
* **Weak scaling**, a problem that grows with the machine. If a run on ``N`` processors
  spends a fraction ``s`` of its time in serial work, one processor would need
  ``s + N·(1 - s)`` times as long: :func:`gustafson_speedup`, which grows without bound.

The two laws count the serial part against different runs. Amdahl's serial fraction
``1 - α`` is a share of the *one-processor* run; Gustafson's ``s`` is a share of the
*N-processor* run. For one and the same problem they differ (the one processor does all
the parallel work itself): :func:`amdahl_serial_fraction` and :func:`gustafson_serial_share`
convert one into the other.

A measurement says which applies. :func:`karp_flatt` turns one measured speedup into the
serial fraction it implies (Karp and Flatt, 1990); :func:`fit_amdahl` fits ``α`` to times
measured at several processor counts, and :func:`fit_gustafson` fits ``s`` to scaled
speedups. Both fit the *median* at each processor count, the number a speedup is quoted
from, so a fitted fraction and the median speedup agree through the law; the confidence
interval is Student's t on a standard error found by resampling the repeats (a seeded
bootstrap), or from the scatter about the curve when each count was measured once.
:attr:`Fit.doubt` says when the data cannot support the fitted fraction.

Examples
--------
>>> amdahl_speedup(0.8, 4)
2.5
>>> round(amdahl_limit(0.8), 9)   # a 20% serial portion caps the speedup at 5
5.0
>>> gustafson_speedup(0.25, 4)   # s + N·(1 - s)
3.25
>>> round(karp_flatt(amdahl_speedup(0.8, 4), 4), 12)
0.2
>>> round(amdahl_serial_fraction(0.2, 4), 4)   # 20% of a 4-processor run, 5.9% of one
0.0588
"""

from perfmodel.scaling.fits import BOOTSTRAP_RESAMPLES, ROUNDING, Fit, fit_amdahl, fit_gustafson
from perfmodel.scaling.laws import (
    amdahl_limit,
    amdahl_serial_fraction,
    amdahl_speedup,
    efficiency,
    gustafson_serial_share,
    gustafson_speedup,
    karp_flatt,
)

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "ROUNDING",
    "Fit",
    "amdahl_limit",
    "amdahl_serial_fraction",
    "amdahl_speedup",
    "efficiency",
    "fit_amdahl",
    "fit_gustafson",
    "gustafson_serial_share",
    "gustafson_speedup",
    "karp_flatt",
]
