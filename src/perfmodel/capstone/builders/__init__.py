"""Real models in ONNX, built from their architecture: nothing downloaded, no PyTorch.

Each builder writes the graph a ``torch.onnx.export`` of the same architecture would
(opset 17: MatMul plus Add for a linear layer, the erf form of GELU, attention as
Transpose, MatMul, Softmax, MatMul), with seeded random weights, so onnxruntime can run it
and :func:`~perfmodel.capstone.import_onnx` can price it.

``weights=False`` gives the same graph with every weight's shape but none of its data
(external data that was never written): enough to price a full-size GPT-2 or ResNet-50
on any device in a fraction of a second, not enough to run it.

One module per family, each close to its paper's shapes: an MLP, ResNet (He et al. 2016),
MobileNetV2 (Sandler et al. 2018), EfficientNet-B0 (Tan and Le 2019), ConvNeXt-T (Liu et al.
2022), ViT-B/16 (Dosovitskiy et al. 2021), BERT-base (Devlin et al. 2019), GPT-2 (Radford et
al. 2019) and an LSTM language model (Zaremba et al. 2014); all write with
:class:`~perfmodel.capstone.builders.graph.GraphBuilder`.

Examples
--------
>>> from perfmodel.capstone import import_onnx
>>> import_onnx(resnet(weights=False)).parameters  # ResNet-50, with batch-norm statistics
25610152
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfmodel.capstone.builders.bert import bert
from perfmodel.capstone.builders.convnext import convnext_t
from perfmodel.capstone.builders.efficientnet import efficientnet_b0
from perfmodel.capstone.builders.gpt2 import gpt2
from perfmodel.capstone.builders.heldout import (
    HELD_OUT,
    densenet,
    gru,
    regnet_y,
    shufflenet_v2,
    squeezenet,
)
from perfmodel.capstone.builders.lstm import lstm_lm
from perfmodel.capstone.builders.mlp import mlp
from perfmodel.capstone.builders.mobilenet import mobilenet_v2
from perfmodel.capstone.builders.resnet import resnet
from perfmodel.capstone.builders.vit import vit

__all__ = [
    "BUILDERS",
    "CPU_MODELS",
    "HELD_OUT",
    "bert",
    "convnext_t",
    "cpu_model",
    "densenet",
    "efficientnet_b0",
    "gpt2",
    "gru",
    "lstm_lm",
    "mlp",
    "mobilenet_v2",
    "regnet_y",
    "resnet",
    "shufflenet_v2",
    "squeezenet",
    "vit",
]

#: Every builder, by its function's name.
BUILDERS: dict[str, Callable[..., Any]] = {
    builder.__name__: builder
    for builder in (
        mlp,
        resnet,
        mobilenet_v2,
        efficientnet_b0,
        convnext_t,
        vit,
        bert,
        gpt2,
        lstm_lm,
    )
}

#: The models lecture 12 and ``benchmarks/capstone.py`` run on this CPU, each at two sizes:
#: small enough for a few milliseconds a run, large enough to leave the overhead regime.
CPU_MODELS: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {
    "MLP": {
        "small": ("mlp", {"batch": 32, "widths": (784, 1024, 1024, 10)}),
        "large": ("mlp", {"batch": 256, "widths": (784, 2048, 2048, 10)}),
    },
    "ResNet": {
        "small": (
            "resnet",
            {"batch": 1, "image": 64, "blocks": (1, 1, 1, 1), "widths": (16, 32, 64, 128)},
        ),
        "large": (
            "resnet",
            {"batch": 2, "image": 128, "blocks": (2, 2, 2, 2), "widths": (32, 64, 128, 256)},
        ),
    },
    "GPT-2": {
        "small": (
            "gpt2",
            {
                "batch": 1,
                "seq_len": 64,
                "width": 256,
                "layers": 2,
                "heads": 4,
                "vocab": 4096,
                "context": 256,
            },
        ),
        "large": (
            "gpt2",
            {
                "batch": 1,
                "seq_len": 256,
                "width": 512,
                "layers": 4,
                "heads": 8,
                "vocab": 8192,
                "context": 512,
            },
        ),
    },
}


def cpu_model(name: str, size: str, *, seed: int = 0) -> Any:
    """One of :data:`CPU_MODELS`, with its weights: ``cpu_model("GPT-2", "small")``.

    Parameters
    ----------
    name : {"MLP", "ResNet", "GPT-2"}
        Which model.
    size : {"small", "large"}
        Which of its two sizes.
    seed : int
        Seed of the random weights, at least 0.

    Returns
    -------
    onnx.ModelProto
        The model its builder makes with those arguments.
    """
    from perfmodel._validate import choice

    name = choice("name", name, tuple(CPU_MODELS))
    size = choice("size", size, ("small", "large"))
    builder, arguments = CPU_MODELS[name][size]
    return BUILDERS[builder](seed=seed, **arguments)
