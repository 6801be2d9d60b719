"""Patch: ONNX Min, Max, Sum and Mean of constant inputs fold elementwise (BUGS: WavLM exported
with `torch.onnx.export(..., dynamo=True)` stopped at import).

When every input of these variadic ops is a constant, the importer folds them with NumPy, but
with `np.min(a, b)` (and `np.max`, `np.sum`, `np.mean`), which take `b` as an *axis*: a float
constant stops the import ("only integer scalar arrays can be converted to a scalar index",
WavLM's relative position buckets), and an integer scalar constant silently reduces along that
axis instead (Min([1, 5, 3], 0) gave 1, not [0, 0, 0]). On the fork they fold as ONNX defines
them: elementwise, broadcasting.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from . import onnxrun

CASES = {
    "Min": (np.array([1.0, 5.0, 3.0], "float32"), np.array(2.0, "float32")),
    "Max": (np.array([1.0, 5.0, 3.0], "float32"), np.array([[2.0], [4.0]], "float32")),
    "Sum": (np.array([1.0, 5.0, 3.0], "float32"), np.array(0.5, "float32")),
    "Mean": (np.array([1.0, 5.0, 3.0], "float32"), np.array([3.0, 1.0, 1.0], "float32")),
    "Min-int": (np.array([1, 5, 3], "int64"), np.array(0, "int64")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_constant_inputs_fold_elementwise(case: str) -> None:
    op = case.split("-")[0]
    a, b = CASES[case]
    elem = helper.np_dtype_to_tensor_dtype(a.dtype)
    nodes = [
        helper.make_node(op, ["a", "b"], ["folded"]),
        helper.make_node("Add", ["folded", "x"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        op,
        [helper.make_tensor_value_info("x", elem, [1])],
        [onnxrun.out("y", elem)],
        initializer=[numpy_helper.from_array(a, "a"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnxrun.check(model, {"x": np.ones(1, a.dtype)})
