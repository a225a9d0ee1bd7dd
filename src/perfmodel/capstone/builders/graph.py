"""What every builder writes with: a graph that collects nodes and weights as an
architecture is walked, then becomes an ONNX model (opset 17, IR version 8)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perfmodel._validate import count, flag

__all__ = ["OPSET", "GraphBuilder"]

#: The ONNX opset every builder writes (what ``torch.onnx.export`` wrote by default).
OPSET = 17


class GraphBuilder:
    """Nodes and weights accumulated while a builder walks an architecture.

    Parameters
    ----------
    name : str
        The ONNX graph's name.
    weights : bool
        Write random weights; False writes their shapes only (external data never written).
    seed : int
        Seed of the random weights, at least 0.
    """

    def __init__(self, name: str, *, weights: bool, seed: int) -> None:
        import numpy as np

        self.name = name
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.weights = flag("weights", weights)
        self.rng = np.random.default_rng(count("seed", seed, minimum=0))

    def weight(self, name: str, shape: Sequence[int], *, scale: float | None = None) -> str:
        """A weight of ``shape``: random normal with fan-in scaling, or shape only.

        Parameters
        ----------
        name : str
            The initializer's name.
        shape : sequence of int
            Its shape, count per axis.
        scale : float, optional
            Standard deviation of its values, dimensionless; None scales by fan-in
            (one over the square root of the product of every axis but the first).

        Returns
        -------
        str
            ``name``, for the node that reads it.
        """
        import numpy as np
        from onnx import TensorProto, numpy_helper

        if self.weights:
            std = (
                scale
                if scale is not None
                else 1 / math.sqrt(max(1, math.prod(shape[1:]) or shape[0]))
            )
            values = (self.rng.standard_normal(shape) * std).astype(np.float32)
            tensor = numpy_helper.from_array(values, name)
        else:
            tensor = TensorProto(name=name, dims=list(shape), data_type=TensorProto.FLOAT)
            tensor.data_location = TensorProto.EXTERNAL
            entry = tensor.external_data.add()
            entry.key, entry.value = "location", "never-written.bin"
        self.initializers.append(tensor)
        return name

    def constant(self, name: str, values: Any) -> str:
        """A small constant (a shape, a scale, a mask) as a Constant node, as an export writes
        it: not a weight.

        Parameters
        ----------
        name : str
            The node's name and its output's.
        values : numpy.ndarray
            The constant's values, stored in the node.

        Returns
        -------
        str
            ``name``, for the node that reads it.
        """
        from onnx import helper, numpy_helper

        self.nodes.append(
            helper.make_node(
                "Constant", [], [name], name=name, value=numpy_helper.from_array(values, name)
            )
        )
        return name

    def statistic(self, name: str, values: Any) -> str:
        """A stored tensor that is not trained (batch norm's running variance), always written.

        Parameters
        ----------
        name : str
            The initializer's name.
        values : numpy.ndarray
            Its values, written even when the builder writes no weights.

        Returns
        -------
        str
            ``name``, for the node that reads it.
        """
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(values, name))
        return name

    def conv_bn(self, x: str, name: str, c_in: int, c_out: int, k: int, *, stride: int = 1,
                groups: int = 1) -> str:  # fmt: skip
        """A square convolution without bias, then batch norm as its own node (an eval-mode
        export), padded to keep the size at stride 1.

        Parameters
        ----------
        x : str
            The input tensor.
        name : str
            The convolution's name; the batch norm is ``name_bn``.
        c_in, c_out : int
            Input and output channels, count.
        k : int
            The window's side, count of pixels.
        stride : int
            The stride, count of pixels.
        groups : int
            Channel groups (``c_in`` for a depthwise convolution), count.

        Returns
        -------
        str
            The batch norm's output.
        """
        import numpy as np

        w = self.weight(f"{name}.weight", (c_out, c_in // groups, k, k))
        y = self.add("Conv", [x, w], name, dilations=[1, 1], group=groups, kernel_shape=[k, k],
                     pads=[k // 2] * 4, strides=[stride, stride])  # fmt: skip
        scale = self.weight(f"{name}_bn.scale", (c_out,), scale=1.0)
        shift, mean = (self.weight(f"{name}_bn.{p}", (c_out,), scale=0.1) for p in ("bias", "mean"))
        var = self.statistic(f"{name}_bn.var", np.ones(c_out, dtype=np.float32))
        return self.add("BatchNormalization", [y, scale, shift, mean, var], f"{name}_bn",
                        epsilon=1e-5, momentum=0.9)  # fmt: skip

    def linear(self, x: str, name: str, fan_in: int, fan_out: int) -> str:
        """A linear layer as an export writes it: MatMul by ``name.weight``, then Add of
        ``name.bias`` (node ``name_bias``).

        Parameters
        ----------
        x : str
            The input tensor, ``fan_in`` wide on its last axis.
        name : str
            The MatMul's name, and its weights' prefix.
        fan_in, fan_out : int
            The weight's rows and columns, count.

        Returns
        -------
        str
            The Add's output.
        """
        y = self.add("MatMul", [x, self.weight(f"{name}.weight", (fan_in, fan_out))], name)
        bias = self.weight(f"{name}.bias", (fan_out,), scale=0.01)
        return self.add("Add", [y, bias], f"{name}_bias")

    def layer_norm(self, x: str, name: str, width: int, *, epsilon: float,
                   output: str | None = None) -> str:  # fmt: skip
        """LayerNormalization over the last axis with ``name.weight`` and ``name.bias``.

        Parameters
        ----------
        x : str
            The input tensor.
        name : str
            The weights' prefix, and the node's name.
        width : int
            The last axis's size, count.
        epsilon : float
            Added to the variance, dimensionless (1e-5 in GPT-2, 1e-6 in ViT, 1e-12 in BERT).
        output : str, optional
            The output's name (default ``name``).

        Returns
        -------
        str
            The output.
        """
        gamma = self.weight(f"{name}.weight", (width,), scale=0.1)
        beta = self.weight(f"{name}.bias", (width,), scale=0.1)
        return self.add("LayerNormalization", [x, gamma, beta], output or name, axis=-1,
                        epsilon=epsilon)  # fmt: skip

    def add(self, op: str, inputs: Sequence[str], name: str, **attrs: Any) -> str:
        """A node named ``name`` whose one output is also called ``name``.

        Parameters
        ----------
        op : str
            The ONNX operator, ``"Conv"``, ``"MatMul"``, ...
        inputs : sequence of str
            The tensors it reads.
        name : str
            The node's name and its output's.
        **attrs
            The operator's attributes, as ``onnx.helper.make_node`` takes them.

        Returns
        -------
        str
            The output's name, ``name``.
        """
        return self.add_many(op, inputs, name, 1, **attrs)[0]

    def add_many(
        self, op: str, inputs: Sequence[str], name: str, outputs: int, **attrs: Any
    ) -> list[str]:
        """A node with ``outputs`` outputs, ``name`` itself when there is one, else
        ``name_0``, ``name_1``...

        Parameters
        ----------
        op : str
            The ONNX operator, ``"Split"``, ``"LSTM"``, ...
        inputs : sequence of str
            The tensors it reads (``""`` for an optional input left out).
        name : str
            The node's name.
        outputs : int
            How many outputs it writes, count.
        **attrs
            The operator's attributes, as ``onnx.helper.make_node`` takes them.

        Returns
        -------
        list of str
            The outputs' names.
        """
        from onnx import helper

        names = [name] if outputs == 1 else [f"{name}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, list(inputs), names, name=name, **attrs))
        return names

    def model(self, inputs: Sequence[Any], output: str, output_shape: Sequence[int]) -> Any:
        """The ONNX model of everything added so far.

        Parameters
        ----------
        inputs : sequence of onnx.ValueInfoProto
            The graph's inputs, with their fixed shapes.
        output : str
            The tensor the graph returns (fp32).
        output_shape : sequence of int
            Its shape, count per axis.

        Returns
        -------
        onnx.ModelProto
            The model, at opset :data:`OPSET` and IR version 8.
        """
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            self.nodes,
            self.name,
            list(inputs),
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, list(output_shape))],
            self.initializers,
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="perfmodel"
        )
        model.ir_version = 8  # what onnxruntime releases since 1.14 read
        return model
