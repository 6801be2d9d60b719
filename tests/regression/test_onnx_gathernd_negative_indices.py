"""Patch: ONNX GatherND counts negative indices from the end of their axis (BUGS: Falcon
exported with `torch.onnx.export(..., dynamo=True)` returned NaN; a silently wrong result).

The ONNX spec allows GatherND indices in [-s, s-1]. The dynamo exporter writes Falcon's
`qkv[..., [-2], :]` as a GatherND with index -2; stock 0.26.0 passes the indices to
`gather_nd` as they are and reads out of bounds (NaN, garbage, zeros: different each run).
On the fork constant and run-time indices are wrapped and the result is ONNX's.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from . import onnxrun


def _model(indices: np.ndarray, constant: bool, batch_dims: int, shape: list[int]):  # type: ignore[no-untyped-def]
    """GatherND of `data` (of `shape`) by `indices`, an initializer or a graph input."""
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, shape)]
    inits = []
    if constant:
        inits.append(numpy_helper.from_array(indices, "indices"))
    else:
        inputs.append(
            helper.make_tensor_value_info("indices", TensorProto.INT64, list(indices.shape))
        )
    node = helper.make_node("GatherND", ["data", "indices"], ["y"], batch_dims=batch_dims)
    graph = helper.make_graph([node], "g", inputs, [onnxrun.out("y")], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("constant", [True, False], ids=["constant", "runtime"])
def test_negative_indices(constant: bool) -> None:
    rng = np.random.default_rng(0)
    data = rng.standard_normal((3, 6, 4)).astype("float32")
    indices = np.array([[[-2], [0]], [[-1], [5]], [[-6], [3]]], dtype="int64")  # batch_dims=1
    model = _model(indices, constant, 1, list(data.shape))
    feed = {"data": data} if constant else {"data": data, "indices": indices}
    onnxrun.check(model, feed)


def test_falcon_split() -> None:
    """Falcon's key and value heads: the second-to-last and last of 6 heads."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal((6, 16)).astype("float32")
    model = _model(np.array([[-2], [-1]], dtype="int64"), True, 0, list(data.shape))
    onnxrun.check(model, {"data": data})
