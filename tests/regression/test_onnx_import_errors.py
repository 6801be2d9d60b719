"""Patches an-import-error-names-the-node-it-stopped-at and a-shape-output-feeds-any-op.

On stock 0.26.0 a converter's error says nothing about where it stopped (a KeyError of a missing
attribute reads `KeyError: 'num_heads'`), the importer prints the node's inputs to stdout, and a
Shape output reaching an op outside a short list raises "Node  cannot handle ShapeExpr inputs."
(187 of ONNX's node conformance cases). On the fork the error carries the op type and node name
(a missing attribute is OpAttributeRequired), and the shape becomes an int64 tensor.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from onnx import TensorProto, helper
from tvm.relax.frontend.onnx import from_onnx

from .onnxrun import check, node_model, out


def test_missing_attribute_names_the_node_and_the_attribute(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ONNX's 4-D Attention needs no num_heads; the converter reads it."""
    inputs = {n: np.zeros((1, 2, 3, 4), dtype="float32") for n in ("q", "k", "v")}
    node = helper.make_node("Attention", list(inputs), ["y"], name="attn0")
    model = node_model(node, inputs, [out("y")], 23)
    with pytest.raises(
        tvm.error.OpAttributeRequired, match=r"ONNX Attention node 'attn0'.*num_heads"
    ):
        from_onnx(model)
    assert "Error converting operator" not in capsys.readouterr().out


def test_shape_output_feeds_any_op() -> None:
    """Shape -> Mul (not among the ops that take shape values) -> the shape doubled."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Mul", ["shape", "shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "shape_mul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [out("y", TensorProto.INT64)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    check(model, {"x": np.zeros((3, 4), dtype="float32")})
