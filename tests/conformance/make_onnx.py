"""Writes a small ONNX model (Conv + Relu + a Gemm) to the path given, for the conformance
lane's user-folder test. Run with a venv's interpreter that has onnx."""

from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype("float32"), "w")
fc = numpy_helper.from_array(rng.standard_normal((4 * 6 * 6, 5)).astype("float32"), "fc")
shape = numpy_helper.from_array(np.array([1, -1], dtype="int64"), "shape")
graph = helper.make_graph(
    [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "fc"], ["y"]),
    ],
    "small",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
    [w, fc, shape],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
