"""Patches import-castlike-float8-casts-as-onnx-defines-them and refuse-dropout-in-training-
mode-instead-of-the-identity: the ONNX importer imports CastLike, and says so where TVM would
compute another result than ONNX defines (found by ONNX's node conformance cases). Each patch's
`Regression-Test:` trailers name its tests here (the float8 casts': test_float8_cast.py).

On stock 0.26.0: CastLike is not implemented; Dropout in training mode returns its input
unchanged. On the fork CastLike matches ONNX's reference, and training Dropout is an error that
names the op and the reason: at import, or, for a training_mode known only at run time, when
the compiled model runs.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import tvm
from onnx import TensorProto, helper
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx

from .onnxrun import check, node_model, out


def test_castlike_imports() -> None:
    inputs = {
        "x": np.array([[1.5, -2.25, 3e4]], dtype="float32"),
        "like": np.zeros(1, dtype="float16"),
    }
    node = helper.make_node("CastLike", ["x", "like"], ["y"])
    check(node_model(node, inputs, [out("y", TensorProto.FLOAT16)], 19), inputs)


def _dropout(ratio: float, training: bool) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    inputs = {
        "x": np.arange(12, dtype="float32").reshape(3, 4),
        "ratio": np.array(ratio, dtype="float32"),
        "training": np.array(training),
    }
    node = helper.make_node("Dropout", list(inputs), ["y", "mask"])
    return node_model(node, inputs, [out("y"), out("mask", TensorProto.BOOL)], 13), inputs


def test_dropout_training_at_run_time_raises() -> None:
    """training_mode is a graph input: true with ratio 0.5 would zero random elements (stock
    returns the input); the same compiled model stays the identity for inference."""
    model, inputs = _dropout(0.5, True)
    vm = relax.VirtualMachine(tvm.compile(from_onnx(model), target="llvm"), tvm.cpu())
    args = [tvm.runtime.tensor(a) for a in inputs.values()]
    with pytest.raises(RuntimeError, match="Dropout with training_mode true and ratio > 0"):
        vm["main"](*args)
    model, inputs = _dropout(0.5, False)
    check(model, inputs)
