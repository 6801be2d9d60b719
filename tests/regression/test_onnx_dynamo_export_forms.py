"""Patch: the ONNX importer takes the Constant and Expand forms PyTorch's dynamo exporter writes.

`torch.onnx.export(model, args, dynamo=True, optimize=False)` of torchvision's resnet18 stops
on stock 0.26.0 at its first Constant ("no value in Constant": the exporter writes value_ints),
and swin_t's at an Expand to the Shape of a computed scalar. Here: a small convolutional model
exported that way, compared with PyTorch, and the two node forms alone with ONNX's reference.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

from .onnxrun import check, node_model, out, run


@pytest.mark.parametrize(
    ("attribute", "value"), [("value_ints", [1, 2]), ("value_float", 0.5), ("value_int", 7)]
)
def test_constant_typed_values(attribute: str, value: object) -> None:
    node = helper.make_node("Constant", [], ["c"], **{attribute: value})
    elem = TensorProto.INT64 if "int" in attribute else TensorProto.FLOAT
    check(node_model(node, {}, [out("c", elem)], 13), {})


def test_expand_to_the_shape_of_a_computed_scalar() -> None:
    graph = helper.make_graph(
        [
            helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
            helper.make_node("Shape", ["m"], ["empty"]),
            helper.make_node("Expand", ["idx", "empty"], ["y"]),
        ],
        "expand_empty",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [5]),
        ],
        [out("y", TensorProto.INT64)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    check(model, {"x": np.ones(3, dtype="float32"), "idx": np.arange(5, dtype="int64")})


def test_unoptimized_dynamo_export_of_a_conv_net(tmp_path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(8, 4),
    ).eval()
    x = torch.randn(1, 3, 16, 16)
    program = torch.onnx.export(model, (x,), dynamo=True, optimize=False)
    program.save(str(tmp_path / "net.onnx"))
    import onnx

    onnx_model = onnx.load(str(tmp_path / "net.onnx"))
    name = onnx_model.graph.input[0].name
    got = run(onnx_model, {name: x.numpy()})[0]
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
