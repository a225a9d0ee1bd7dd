"""A model graph that knows its layers: parameters, output sizes, names, and its memory.

:class:`Model` is the :class:`~perfmodel.pipeline.graph.Graph` the zoo builds. Beside each
node's work and send time it keeps the node's parameter count (what DeepSpeed-style
balancing splits on), its output's size in bytes, and its name, so that
:meth:`Model.with_memory` can say what each stage must hold on its device, as PipeDream
plans it: the stage's weights plus its activations for every micro-batch in flight.

:class:`ModelBuilder` collects operations from :mod:`perfmodel.ops` and prices them on a
device and a link.

>>> b = ModelBuilder("H100 SXM", "NVLink 4", "bf16")
>>> x = b.add(ops.matmul(8, 1024, 1024, dtype="bf16"), 8 * 1024, params=1024 * 1024)
>>> y = b.add(ops.matmul(8, 1024, 1024, dtype="bf16"), 8 * 1024, x, params=1024 * 1024)
>>> model = b.graph("a batch of 8 vectors").with_memory(capacity_bytes=4e6, in_flight=4)
>>> model.memory  # 2 bytes per weight, 4 micro-batches of 8 x 1024 bf16 activations
(2162688.0, 2162688.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfmodel import ops
from perfmodel._validate import count, positive, text
from perfmodel.comms import as_link
from perfmodel.hardware import DeviceLike, LinkLike, dtype_bytes, get
from perfmodel.metrics import transfer_time_s
from perfmodel.pipeline.graph import Graph, check_per_node
from perfmodel.roofline import estimate

__all__ = ["Model", "ModelBuilder"]


class Model(Graph):
    """A model graph that also knows each node's parameters, output bytes and name.

    ``input_description`` says what one input is (``"a batch of 8 sequences of 1,024
    tokens"``), so that a throughput in inputs per second can be read.

    Parameters
    ----------
    work : list of float
        ``work[i]``: compute time of node i, s.
    comm : list of float
        ``comm[i]``: time to send node i's output to another stage, s.
    edges : list of (int, int)
        ``(u, v)``: node v reads node u's output.
    params : list of int
        ``params[i]``: the parameters node i holds, count.
    labels : list of str
        ``labels[i]``: node i's name, for plots.
    input_description : str
        What one input of the pipeline is, in words.
    out_bytes : list of int, optional
        ``out_bytes[i]``: the size of node i's output for one input, B; zeros by default.
    weight_bytes : int
        Bytes per parameter, B (2 for bf16).
    memory : list of float, optional
        ``memory[i]``: the bytes node i keeps on its device, B; zeros by default.
    capacity : float
        The bytes one device holds, B; ``inf`` by default.
    """

    __slots__ = ("input_description", "labels", "out_bytes", "params", "weight_bytes")
    params: tuple[int, ...]
    labels: tuple[str, ...]
    input_description: str
    out_bytes: tuple[int, ...]
    weight_bytes: int

    def __init__(
        self,
        work: Sequence[float],
        comm: Sequence[float],
        edges: Sequence[tuple[int, int]],
        params: Sequence[int],
        labels: Sequence[str],
        input_description: str,
        out_bytes: Sequence[int] | None = None,
        weight_bytes: int = 2,
        memory: Sequence[float] | None = None,
        capacity: float = math.inf,
    ) -> None:
        super().__init__(work, comm, edges, memory=memory, capacity=capacity)
        n = self.n
        object.__setattr__(self, "params", check_per_node("params", params, _counts, "counts", n))
        object.__setattr__(self, "labels", check_per_node("labels", labels, _string, "strings", n))
        object.__setattr__(self, "input_description", text("input_description", input_description))
        sizes = check_per_node("out_bytes", (0,) * n if out_bytes is None else out_bytes,
                               _counts, "bytes", n)  # fmt: skip
        object.__setattr__(self, "out_bytes", sizes)
        object.__setattr__(self, "weight_bytes", count("weight_bytes", weight_bytes))

    def __reduce__(self) -> tuple[type[Model], tuple[object, ...]]:  # for process pools
        fields = (self.work, self.comm, self.edges, self.params, self.labels)
        extra = (self.out_bytes, self.weight_bytes, self.memory, self.capacity)
        return (Model, (*fields, self.input_description, *extra))

    def with_memory(
        self, *, capacity_bytes: float, in_flight: int = 1, bytes_per_param: int | None = None
    ) -> Model:
        """The same model on devices of ``capacity_bytes``, each node's memory filled in.

        A node keeps its weights and, for each of ``in_flight`` micro-batches, its output
        activation (PipeDream's plan: a stage stashes the activations of every input it
        has started and not finished).

        Parameters
        ----------
        capacity_bytes : float
            What one device holds for this model, B (``inf``: no limit).
        in_flight : int
            Micro-batches whose activations a stage holds at once, count.
        bytes_per_param : int, optional
            Bytes each parameter keeps, B: by default the weight's own (``weight_bytes``);
            16 for mixed-precision training with Adam (weight, gradient, two moments and
            an fp32 master copy).

        Returns
        -------
        Model
            A copy whose ``memory[i]`` is ``params[i] * bytes_per_param + in_flight *
            out_bytes[i]`` and whose ``capacity`` is ``capacity_bytes``.

        Raises
        ------
        ValueError
            When one node alone needs more than ``capacity_bytes``.
        """
        capacity = positive("capacity_bytes", capacity_bytes, allow_infinity=True)
        in_flight = count("in_flight", in_flight)
        per_param = self.weight_bytes if bytes_per_param is None else bytes_per_param
        per_param = count("bytes_per_param", per_param)
        memory = [
            float(p * per_param + in_flight * b)
            for p, b in zip(self.params, self.out_bytes, strict=True)
        ]
        return Model(
            self.work,
            self.comm,
            self.edges,
            self.params,
            self.labels,
            self.input_description,
            self.out_bytes,
            self.weight_bytes,
            memory,
            capacity,
        )


def _counts(name: str, value: object) -> int:
    """A whole number of things, zero allowed, kept as a Python int (no numpy overflow)."""
    return count(name, value, minimum=0)


def _string(name: str, value: object) -> str:
    """A string, empty allowed."""
    if not isinstance(value, str):
        raise TypeError(f"`{name}` must be a string (got {type(value).__name__}).")
    return value


class ModelBuilder:
    """Collects nodes (an operation's cost, its output's size) and edges, priced on a machine.

    Parameters
    ----------
    device : str or hardware.Device
        Where each node's ``work`` is its operation's roofline time.
    link : str, hardware.Link or hardware.LinkSpec
        Where each node's ``comm`` is its output's latency plus bytes over bandwidth.
    dtype : str
        The dtype of weights and activations (``"bf16"``, ``"fp32"``, ...).
    """

    def __init__(self, device: DeviceLike, link: LinkLike, dtype: str) -> None:
        self.device = get(device, argument="device")
        self.link = as_link(link, argument="link")
        self.dtype = dtype
        self.width = dtype_bytes(dtype)
        self.work: list[float] = []
        self.comm: list[float] = []
        self.edges: list[tuple[int, int]] = []
        self.params: list[int] = []
        self.labels: list[str] = []
        self.out_bytes: list[int] = []

    def add(
        self, cost: ops.Cost, out_elements: int, *inputs: int, params: int = 0, label: str = ""
    ) -> int:
        """Add one node reading ``inputs``; return its index.

        Parameters
        ----------
        cost : ops.Cost
            The node's operation, priced by the roofline on the device.
        out_elements : int
            Elements in the node's output, count.
        *inputs : int
            The nodes whose outputs it reads.
        params : int
            The parameters it holds, count.
        label : str
            The node's name; the operation's own label when empty.

        Returns
        -------
        int
            The new node's index.
        """
        node = len(self.work)
        # Everything is checked and priced before anything is kept, so that a bad node
        # leaves the builder as it was.
        if not isinstance(cost, ops.Cost):
            raise TypeError(f"`cost` must be an ops.Cost (got {type(cost).__name__}).")
        nbytes = _counts("out_elements", out_elements) * self.width
        sources = [count(f"inputs[{j}]", i, minimum=0) for j, i in enumerate(inputs)]
        later = [i for i in sources if i >= node]
        if later:
            raise ValueError(
                f"`inputs` must be nodes already added, numbered below {node} (got {later[0]})."
            )
        held = _counts("params", params)
        name = _string("label", label) or cost.label
        work = estimate(cost, self.device, dtype=self.dtype).time_s
        comm = transfer_time_s(nbytes, self.link.bandwidth, latency_s=self.link.latency)
        self.params.append(held)
        self.labels.append(name)
        self.work.append(work)
        self.out_bytes.append(nbytes)
        self.comm.append(comm)
        self.edges.extend((i, node) for i in sources)
        return node

    def graph(self, input_description: str) -> Model:
        """The model built so far.

        Parameters
        ----------
        input_description : str
            What one input of the pipeline is, in words.

        Returns
        -------
        Model
            The nodes and edges added, in the order they were added.
        """
        return Model(
            self.work,
            self.comm,
            self.edges,
            self.params,
            self.labels,
            input_description,
            self.out_bytes,
            self.width,
        )
