"""Patches rms-norm-over-every-axis, pow-with-an-exponent-of-another-type,
constantofshape-of-a-shape-given-at-run-time and optional-tensor-inputs-optionalhaselement-of-no-
input: ONNX imports that stock 0.26.0 accepts and then fails to compile or run. Each patch's
`Regression-Test:` trailers name its tests here.

On stock: RMSNormalization over every axis stops in TOPI (shape.size() == indices.size()),
ConstantOfShape of a run-time shape leaves broadcast_to unlegalized ("CodeGenVM cannot handle
this intrinsic"), Pow with an exponent of another type fails the type check, a graph input of
optional(tensor) type comes in as an untyped 0-d tensor, and OptionalHasElement without an input
raises. Each is compared with ONNX's reference implementation on the fork.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from .onnxrun import check, node_model, out


def test_rms_normalization_over_every_axis() -> None:
    inputs = {
        "x": np.random.default_rng(0).standard_normal((3, 4)).astype("float32"),
        "s": np.linspace(0.5, 1.5, 12, dtype="float32").reshape(3, 4),
    }
    node = helper.make_node("RMSNormalization", ["x", "s"], ["y"], axis=0)
    check(node_model(node, inputs, [out("y")], 23), inputs)


def test_constant_of_shape_of_a_runtime_shape() -> None:
    value = helper.make_tensor("value", TensorProto.INT32, [1], [7])
    node = helper.make_node("ConstantOfShape", ["shape"], ["y"], value=value)
    inputs = {"shape": np.array([2, 3], dtype="int64")}
    check(node_model(node, inputs, [out("y", TensorProto.INT32)], 20), inputs)


def test_pow_exponent_of_another_type() -> None:
    inputs = {
        "x": np.array([1.5, 2.0, -3.0], dtype="float32"),
        "y": np.array([2, 3, 1], dtype="int64"),
    }
    node = helper.make_node("Pow", ["x", "y"], ["z"])
    check(node_model(node, inputs, [out("z")], 15), inputs)


def test_optional_tensor_graph_input() -> None:
    optional = helper.make_optional_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, [4])
    )
    graph = helper.make_graph(
        [
            helper.make_node("OptionalHasElement", ["x"], ["has"]),
            helper.make_node("OptionalGetElement", ["x"], ["y"]),
        ],
        "optional_input",
        [helper.make_value_info("x", optional)],
        [out("has", TensorProto.BOOL), out("y")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    check(model, {"x": np.arange(4, dtype="float32")})


def test_optional_has_element_without_an_input() -> None:
    node = helper.make_node("OptionalHasElement", [], ["has"])
    check(node_model(node, {}, [out("has", TensorProto.BOOL)], 18), {})
