"""Patches dropout-s-mask-is-bool, batchnormalization-s-running-statistics-as-onnx-weighs-them,
layernormalization-s-mean-and-invstddev-outputs, isinf-honours-detect-negative-and-detect-positive,
mod-s-remainder-takes-the-sign-fmod-asks-for, gatherelements-counts-negative-indices-from-the-end,
expand-by-a-run-time-shape-broadcasts-both-ways and roialign-s-max-mode-as-onnx-defines-it: the
ONNX importer returns the right result for ops where stock 0.26.0 returns a wrong one silently
(found by ONNX's own node conformance cases, `tvmfork conformance onnx-node`).
Each patch's `Regression-Test:` trailers name its tests here.

Each model is one node, run through `from_onnx` -> `tvm.compile("llvm")` and compared, output
by output (count, shape, dtype, values), with ONNX's reference implementation. On stock:
LayerNormalization's Mean/InvStdDev are 0-d zeros, Dropout's mask is float, training-mode
BatchNormalization weighs the running statistics the wrong way round, GatherElements reads
before the tensor for negative indices, Expand by a runtime shape drops the input's rows where
the target says 1, IsInf ignores detect_negative/detect_positive, and Mod folds constants with
the other op than it computes with (fmod=0: -3 mod 2 folds to -1, not 1) and gets float edge
cases wrong (0 mod -2 is -0.0, -3 mod inf is inf), and RoiAlign's max mode pools the largest
interpolated sample instead of the largest weighted corner term of each sample.
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

RNG = np.random.default_rng(0)


def test_layer_normalization_mean_and_inv_std_dev() -> None:
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    inputs = {"x": x, "s": np.ones((3, 4), "float32"), "b": np.zeros((3, 4), "float32")}
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "m", "i"], axis=1)
    check(node_model(node, inputs, [out("y"), out("m"), out("i")], 17), inputs)


def test_dropout_mask_is_bool() -> None:
    inputs = {"x": RNG.standard_normal((3, 4)).astype("float32")}
    node = helper.make_node("Dropout", ["x"], ["y", "mask"])
    check(node_model(node, inputs, [out("y"), out("mask", TensorProto.BOOL)], 13), inputs)


def test_batch_normalization_training_running_statistics() -> None:
    inputs = {
        "x": RNG.standard_normal((2, 3, 4, 4)).astype("float32"),
        "s": RNG.standard_normal(3).astype("float32"),
        "b": RNG.standard_normal(3).astype("float32"),
        "mean": RNG.standard_normal(3).astype("float32"),
        "var": RNG.random(3).astype("float32") + 0.5,
    }
    node = helper.make_node(
        "BatchNormalization",
        list(inputs),
        ["y", "running_mean", "running_var"],
        training_mode=1,
        momentum=0.8,
    )
    outputs = [out("y"), out("running_mean"), out("running_var")]
    check(node_model(node, inputs, outputs, 15), inputs)


def test_gather_elements_negative_indices() -> None:
    """A negative index counts from the end of the axis; used as it is, it reads memory
    before the tensor (values such as 3e-41)."""
    inputs = {
        "data": np.arange(12, dtype="float32").reshape(3, 4),
        "indices": np.array([[-1, 0], [-4, 3], [2, -2]], dtype="int64"),
    }
    node = helper.make_node("GatherElements", ["data", "indices"], ["y"], axis=1)
    check(node_model(node, inputs, [out("y")], 13), inputs)


def test_expand_by_a_runtime_shape() -> None:
    """(3, 1) expanded by [2, 1, 6] is (2, 3, 6): a target 1 keeps the input's 3."""
    inputs = {
        "data": np.arange(3, dtype="float32").reshape(3, 1),
        "shape": np.array([2, 1, 6], dtype="int64"),
    }
    node = helper.make_node("Expand", ["data", "shape"], ["y"])
    check(node_model(node, inputs, [out("y")], 13), inputs)


@pytest.mark.parametrize(("negative", "positive"), [(0, 1), (1, 0)])
def test_isinf_detect_negative_and_positive(negative: int, positive: int) -> None:
    inputs = {"x": np.array([-np.inf, -1.0, 0.0, np.inf, np.nan], dtype="float32")}
    node = helper.make_node(
        "IsInf", ["x"], ["y"], detect_negative=negative, detect_positive=positive
    )
    check(node_model(node, inputs, [out("y", TensorProto.BOOL)], 10), inputs)


@pytest.mark.parametrize("constant", [False, True])
def test_mod_remainder_takes_the_divisors_sign(constant: bool) -> None:
    a = np.array([-3.0, 3.0, 0.0, -3.0, 1.0, 5.5], dtype="float32")
    b = np.array([2.0, -2.0, -2.0, np.inf, -np.inf, 2.0], dtype="float32")
    node = helper.make_node("Mod", ["a", "b"], ["y"], fmod=0)
    if not constant:
        inputs = {"a": a, "b": b}
        check(node_model(node, inputs, [out("y")], 13), inputs)
        return
    graph = helper.make_graph(
        [node],
        "mod",
        [],
        [out("y")],
        [onnx.numpy_helper.from_array(a, "a"), onnx.numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    vm = relax.VirtualMachine(tvm.compile(from_onnx(model), target="llvm"), tvm.cpu())
    got = vm["main"]().numpy()
    np.testing.assert_array_equal(got, np.mod(a, b))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.mod(a, b)))


def test_roi_align_max_mode() -> None:
    """ONNX's max mode: the largest of the four weighted corner terms w * v of each sample
    point, over the bin's samples; ROIs reaching past the image included."""
    inputs = {
        "x": RNG.standard_normal((1, 2, 6, 5)).astype("float32"),
        "rois": np.array([[0.0, 0.0, 3.0, 3.0], [1.2, 0.5, 4.9, 5.8], [-2, -1, 8, 9]], "float32"),
        "batch_indices": np.array([0, 0, 0], dtype="int64"),
    }
    node = helper.make_node(
        "RoiAlign",
        list(inputs),
        ["y"],
        mode="max",
        output_height=3,
        output_width=2,
        sampling_ratio=2,
    )
    check(node_model(node, inputs, [out("y")], 16), inputs)
