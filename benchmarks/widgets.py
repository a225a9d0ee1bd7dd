"""How fast does every lecture's explorer answer when a presenter moves one of its controls?

Each explorer is built in a real IPython kernel (the inline matplotlib backend, as in
JupyterLab), then every control is moved to each of a few values in turn: a slider to its
low end, its middle and its high end, a dropdown or a toggle to each option. The time of one
answer is the time from setting the control's value to the callback returning, with the
figure drawn and encoded as the PNG the browser will show; the comm message to the browser
and the browser painting it are not included (a few milliseconds on localhost).

Every move is then made a second time, and the slowest of those repeats is reported apart:
an explorer keeps the figures it has drawn, so going back to a setting answers from memory.
The goal (issue 15) is every answer within 200 ms on 2 cores.

Run from the repository root::

    .venv/bin/python benchmarks/widgets.py
    .venv/bin/python benchmarks/widgets.py --explorer capstone_explorer
"""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

from jupyter_client.manager import start_new_kernel

#: (module, explorer, arguments as Python source): every explorer a lecture opens.
EXPLORERS = [
    ("transfer", "transfer_time_explorer", ""),
    ("run_time", "run_time_explorer", ""),
    ("devices", "device_explorer", ""),
    ("op_cost", "op_explorer", ""),
    ("roofline", "roofline_explorer", ""),
    ("minibatch", "batch_size_explorer", ""),
    ("measure", "cache_sweep_explorer", ""),
    ("taskgraph", "schedule_explorer", ""),
    ("scaling", "scaling_explorer", "[(1, 1.0), (2, 1.8)], serial_percent=5.0"),
    ("distributed", "data_parallel_explorer", ""),
    ("partition", "partition_explorer", ""),
    ("serving", "serving_explorer", ""),
    ("capstone", "capstone_explorer", ""),
]

#: Runs in the kernel: build one explorer, move every control, print the timings as JSON.
_MEASURE = textwrap.dedent(
    """
    import json, time
    import ipywidgets as widgets
    from perfmodel.widgets.{module} import {explorer}

    started = time.perf_counter()
    box = {explorer}({arguments})
    built_s = time.perf_counter() - started

    def controls(widget):
        if isinstance(widget, (widgets.Output, widgets.Image, widgets.HTML, widgets.Label,
                               widgets.Button)):
            return []
        if isinstance(widget, widgets.Box):
            return [c for child in widget.children for c in controls(child)]
        return [widget] if hasattr(widget, "value") and not widget.disabled else []

    def values(control):
        if hasattr(control, "options"):
            options = list(control.options)
            return [o[1] if isinstance(o, tuple) else o for o in options]
        if isinstance(control, widgets.Checkbox):
            return [not control.value, control.value]
        if isinstance(control, widgets.FloatLogSlider):
            low, high = control.min, control.max
            return [control.base ** low, control.base ** ((low + high) / 2), control.base ** high]
        low, high = control.min, control.max
        middle = (low + high) / 2 if isinstance(control.value, float) else (low + high) // 2
        return [low, middle, high]

    answers, again = [], []
    for control in controls(box):
        start = control.value
        moves = [v for v in values(control) if v != start] + [start]
        for value in moves:
            tick = time.perf_counter()
            control.value = value
            answers.append(
                {{"control": control.description or type(control).__name__,
                  "value": repr(value), "seconds": time.perf_counter() - tick}}
            )
        for value in moves:  # the same moves again: answered from the figures already drawn
            tick = time.perf_counter()
            control.value = value
            again.append(time.perf_counter() - tick)
    print(json.dumps({{"built_s": built_s, "answers": answers, "again": again}}))
    """
)


def measure(client: Any, module: str, explorer: str, arguments: str) -> dict[str, Any]:
    """Build ``explorer`` in the kernel behind ``client`` and time every control's answers."""
    code = _MEASURE.format(module=module, explorer=explorer, arguments=arguments)
    printed: list[str] = []

    def collect(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream" and message["content"]["name"] == "stdout":
            printed.append(message["content"]["text"])
        elif message["msg_type"] == "error":
            printed.append(json.dumps({"error": message["content"]["evalue"]}))

    client.execute_interactive(code, output_hook=collect, timeout=600)
    for line in reversed("".join(printed).splitlines()):
        if line.startswith("{"):
            timings: dict[str, Any] = json.loads(line)
            return timings
    raise RuntimeError(f"{explorer} printed no timings: {''.join(printed)[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--explorer", help="only this explorer (its function name)")
    args = parser.parse_args()
    chosen = [e for e in EXPLORERS if args.explorer in (None, e[1])]
    if not chosen:
        parser.error(f"no explorer named {args.explorer!r}")
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        client.execute_interactive("%matplotlib inline", timeout=60)
        print(f"{'explorer':<24}{'build':>8}{'median':>9}{'slowest':>9}{'repeat':>9}  slowest move")
        worst, worst_repeat = (0.0, ""), 0.0
        for module, explorer, arguments in chosen:
            result = measure(client, module, explorer, arguments)
            if "error" in result:
                raise RuntimeError(f"{explorer}: {result['error']}")
            answers = result["answers"]
            seconds = sorted(a["seconds"] for a in answers)
            slowest = max(answers, key=lambda a: a["seconds"])
            median = seconds[len(seconds) // 2]
            repeat = max(result["again"])
            print(
                f"{explorer:<24}{result['built_s'] * 1e3:6.0f}ms{median * 1e3:7.0f}ms"
                f"{slowest['seconds'] * 1e3:7.0f}ms{repeat * 1e3:7.0f}ms  "
                f"{slowest['control']} = {slowest['value']} ({len(answers)} moves)"
            )
            if slowest["seconds"] > worst[0]:
                worst = (slowest["seconds"], f"{explorer}: {slowest['control']}")
            worst_repeat = max(worst_repeat, repeat)
        print(f"slowest answer: {worst[0] * 1e3:.0f} ms ({worst[1]}); goal 200 ms")
        print(f"slowest repeated answer: {worst_repeat * 1e3:.0f} ms")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
