"""Patch all-class-nms-keeps-boxes-at-the-iou-threshold: TOPI's all-class non-maximum
suppression, reached through ONNX's NonMaxSuppression with constant limits.

On stock: a box whose IoU with a selected box equals the threshold is suppressed (ONNX,
TensorFlow and torchvision keep it: only an IoU above the threshold suppresses), an IoU
threshold of 0 suppresses every box, overlapping or not, and a box of score 0 or below is never
selected. The reference is ONNX's reference implementation.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from .onnxrun import run


def _nms(boxes: np.ndarray, scores: np.ndarray, iou: float) -> None:
    inputs = {"boxes": boxes, "scores": scores}
    graph = helper.make_graph(
        [
            helper.make_node(
                "NonMaxSuppression", ["boxes", "scores", "limit", "iou", "least"], ["sel"]
            )
        ],
        "nms",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape))
            for n, a in inputs.items()
        ],
        [helper.make_tensor_value_info("sel", TensorProto.INT64, None)],
        [
            numpy_helper.from_array(np.array([10], "int64"), "limit"),
            numpy_helper.from_array(np.array([iou], "float32"), "iou"),
            # no score filter: the importer's default (0, before the fork's
            # nonmaxsuppression-reads-its-limits-at-run-time) would drop scores <= 0 itself
            numpy_helper.from_array(np.array([-np.inf], "float32"), "least"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    (want,) = ReferenceEvaluator(model).run(None, inputs)
    (got,) = run(model, inputs)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("score", [0.8, 0.0, -0.5])
def test_a_box_at_the_threshold_is_kept(score: float) -> None:
    """IoU of the first two boxes: 0.5 / 1.0, exactly 0.5 in float32, the threshold."""
    boxes = np.array([[[0, 0, 1, 1], [0, 0, 1, 0.5], [0, 10, 1, 11]]], dtype="float32")
    _nms(boxes, np.array([[[0.9, score, 0.7]]], "float32"), 0.5)


def test_threshold_zero_suppresses_overlapping_boxes_only() -> None:
    boxes = np.array([[[0, 0, 1, 1], [0, 0.5, 1, 1.5], [0, 10, 1, 11]]], dtype="float32")
    _nms(boxes, np.array([[[0.9, 0.8, 0.7]]], "float32"), 0.0)
