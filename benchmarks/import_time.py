"""How long ``import perfmodel`` takes, against a bare interpreter start, side by side.

The goal: ``import perfmodel`` adds under 0.1 s (it loads no numpy: every module loads on
first use). Each run starts a fresh interpreter; the script reports the median of
``--runs`` runs of both, and their difference and ratio.

Run from the repository root::

    .venv/bin/python benchmarks/import_time.py
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def seconds(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    bare, loaded = [], []
    for _ in range(args.runs):  # interleaved, so that machine load hits both alike
        bare.append(seconds("pass"))
        loaded.append(seconds("import perfmodel"))
    b, m = statistics.median(bare), statistics.median(loaded)
    print(f"bare interpreter {b * 1e3:.1f} ms, with `import perfmodel` {m * 1e3:.1f} ms")
    print(f"import perfmodel adds {(m - b) * 1e3:.1f} ms (ratio {m / b:.2f}); goal < 100 ms")


if __name__ == "__main__":
    main()
