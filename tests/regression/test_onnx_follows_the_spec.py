"""Patches bitshift-by-out-of-range-amounts-as-onnx-defines-it,
mish-keeps-its-digits-for-negative-inputs,
spacetodepth-honours-mode-crd, convtranspose-honours-output-shape,
nonmaxsuppression-reads-its-limits-at-run-time and softplus-keeps-its-digits-for-negative-inputs:
each op follows the ONNX spec where stock 0.26.0 returns another result silently (found by ONNX's
node conformance cases, `tvmfork conformance onnx-node`). Each patch's `Regression-Test:`
trailers name its tests here.

Each model is one node, run through `from_onnx` -> `tvm.compile("llvm")` and compared with ONNX's
reference implementation. On stock: a shift by a negative amount or by the type's width or more
gives C's undefined result (opset 28 defines it), SpaceToDepth ignores mode=CRD, ConvTranspose
ignores output_shape, NonMaxSuppression whose limits are graph inputs keeps no box (and
suppresses a box whose IoU equals the threshold), and Softplus/Mish lose the digits of
log(1 + exp(x)) for negative x.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from .onnxrun import check, node_model, onnxruntime, out


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_by_negative_or_too_wide_amounts(direction: str) -> None:
    inputs = {
        "x": np.array([-16, 16, -1, 7, 5, -8], dtype="int32"),
        "y": np.array([-1, 32, 40, 1, 0, 31], dtype="int32"),
    }
    node = helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)
    check(node_model(node, inputs, [out("z", TensorProto.INT32)], 28), inputs)


def test_space_to_depth_crd_mode() -> None:
    inputs = {"x": np.arange(2 * 2 * 4 * 4, dtype="float32").reshape(2, 2, 4, 4)}
    node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode="CRD")
    check(node_model(node, inputs, [out("y")], 28), inputs)


@pytest.mark.parametrize("output_shape", [[10, 8], [8, 6]])
def test_conv_transpose_output_shape(output_shape: list[int]) -> None:
    """[10, 8] is past the full transposed convolution (9, 7): a zero border at the end; [8, 6]
    trims (ONNX's reference implementation fails on it: onnxruntime is the reference)."""
    rng = np.random.default_rng(0)
    inputs = {
        "x": rng.standard_normal((1, 1, 3, 3)).astype("float32"),
        "w": rng.standard_normal((1, 2, 3, 3)).astype("float32"),
    }
    node = helper.make_node(
        "ConvTranspose", ["x", "w"], ["y"], strides=[3, 2], output_shape=output_shape
    )
    model = node_model(node, inputs, [out("y")], 13)
    check(model, inputs, want=onnxruntime(model, inputs))


def test_non_max_suppression_with_limits_given_at_run_time() -> None:
    """Limits as graph inputs; two boxes overlap with IoU exactly 0.5 = the threshold (kept)."""
    inputs = {
        "boxes": np.array(
            [[[0, 0, 1, 1], [0, 0.5, 1, 1.5], [0, 0, 1, 2], [0, 10, 1, 11], [0, 0.1, 1, 1.1]]],
            dtype="float32",
        ),
        "scores": np.array([[[0.9, 0.75, 0.6, 0.95, 0.3]]], dtype="float32"),
        "max_output_boxes_per_class": np.array([3], dtype="int64"),
        "iou_threshold": np.array([0.5], dtype="float32"),
        "score_threshold": np.array([0.0], dtype="float32"),
    }
    node = helper.make_node("NonMaxSuppression", list(inputs), ["selected"])
    check(node_model(node, inputs, [out("selected", TensorProto.INT64)], 11), inputs)


def _log1p_exp_inputs() -> tuple[np.ndarray, np.ndarray]:
    x = np.array([-30.0, -16.0, -9.98, -1.0, 0.0, 3.0, 25.0], dtype="float32")
    return x, np.log1p(np.exp(x.astype("float64")))


def test_softplus_keeps_its_digits_for_negative_inputs() -> None:
    """log(1 + exp(x)) in float32 rounds 1 + exp(x): 2% off at x = -16, 0 below -17. The
    reference is float64 (ONNX's reference implementation computes Softplus that way too).
    The fix is TOPI's softplus (log1p)."""
    x, softplus = _log1p_exp_inputs()
    inputs = {"x": x}
    model = node_model(helper.make_node("Softplus", ["x"], ["y"]), inputs, [out("y")], 18)
    check(model, inputs, want=[softplus.astype("float32")], rtol=1e-5, atol=0)


def test_mish_keeps_its_digits_for_negative_inputs() -> None:
    """x * tanh(log(1 + exp(x))) rounds 1 + exp(x) and then tanh of the small result. The fix
    is the ONNX importer's Mish (x * n / (n + 2), n = e^x (e^x + 2))."""
    x, softplus = _log1p_exp_inputs()
    inputs = {"x": x}
    model = node_model(helper.make_node("Mish", ["x"], ["y"]), inputs, [out("y")], 18)
    want = x * np.tanh(softplus)
    check(model, inputs, want=[want.astype("float32")], rtol=1e-5, atol=0)
