"""Patch: ONNX import folds what is known statically (BUGS.md section 5, the Relax counterpart
of Relay's DynamicToStatic, apache/tvm#17050).

PyTorch's TorchScript exporter (`dynamo=False`) computes pads and squeeze conditions from
shapes and constants. On stock 0.26.0 `from_onnx` stops at "Dynamic pads are not supported
yet."; on the fork those values are folded at import, the live branch of a known `If` is
kept, and the models run with static shapes equal to PyTorch, while a dynamic batch stays
dynamic and a truly dynamic predicate stays a real `relax.If`.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import pytest
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx

from .relaxrun import run_llvm


def export(model: torch.nn.Module, x: torch.Tensor, dynamic_batch: bool = False):
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model.eval(),
            (x,),
            buf,
            dynamo=False,
            opset_version=13,
            input_names=["input"],
            output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}} if dynamic_batch else None,
        )
    return onnx.load_from_string(buf.getvalue())


def has_if(mod: tvm.IRModule) -> bool:
    found = []
    relax.analysis.post_order_visit(mod["main"], lambda e: found.append(isinstance(e, relax.If)))
    return any(found)


def static_output_shape(mod: tvm.IRModule) -> tuple[int, ...]:
    ret = mod["main"].ret_ty
    assert isinstance(ret, relax.TensorType) and ret.shape is not None, ret
    return tuple(int(d) for d in ret.shape)


class PadSqueeze(torch.nn.Module):
    """apache/tvm#17050: negative reflection pads, then squeeze(1)."""

    def __init__(self) -> None:
        super().__init__()
        self.pad = torch.nn.ReflectionPad3d((0, 0, -43, 0, 0, -46))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pad(x).squeeze(1)


def test_seed_reflection_pad_squeeze() -> None:
    x = torch.randn(13, 1, 47, 44, 1)
    model = PadSqueeze()
    mod = from_onnx(export(model, x))
    assert not has_if(mod)
    assert static_output_shape(mod) == (13, 1, 1, 1)
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), model(x).numpy())


class PadToMultiple(torch.nn.Module):
    """Pads computed from the input's shape (pad the last axis to a multiple of 8)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pad = (8 - x.shape[-1] % 8) % 8
        return torch.nn.functional.pad(x, (0, pad, 1, 1), mode="constant", value=0.5)


class SqueezeUnsqueeze(torch.nn.Module):
    """squeeze of a dim that may or may not be 1 (an If in the export), then a reshape."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.pad(x, (1, 1)).squeeze(2)
        return y.reshape(y.shape[0], -1).unsqueeze(1)


@pytest.mark.parametrize(
    ("model", "shape", "expected"),
    [
        (PadToMultiple(), (2, 3, 13), (2, 5, 16)),
        (SqueezeUnsqueeze(), (2, 3, 1, 4), (2, 1, 18)),
    ],
)
def test_shape_derived_pads_and_ifs(model, shape, expected) -> None:
    x = torch.randn(*shape)
    mod = from_onnx(export(model, x))
    assert not has_if(mod)
    assert static_output_shape(mod) == expected
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), model(x).numpy(), rtol=1e-6)


class DynamicBatchSqueeze(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.pad(x, (2, 0)).squeeze(1) * 2.0


def test_dynamic_batch_stays_dynamic() -> None:
    model = DynamicBatchSqueeze()
    mod = from_onnx(export(model, torch.randn(2, 1, 5), dynamic_batch=True))
    assert not has_if(mod)  # the squeezed dim is static, so the If is folded...
    batch = mod["main"].params[0].ty.shape[0]
    assert not isinstance(batch, tvm.tirx.IntImm), batch  # ...but the batch is not frozen
    for n in (2, 5):
        x = torch.randn(n, 1, 5)
        np.testing.assert_allclose(run_llvm(mod, x.numpy()), model(x).numpy())


def test_dynamic_predicate_stays_an_if() -> None:
    class SqueezeBatch(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.squeeze(0) + 1.0

    mod = from_onnx(export(SqueezeBatch(), torch.randn(1, 3), dynamic_batch=True))
    assert has_if(mod)  # whether the batch is 1 is only known at run time


def test_folded_shape_values_stay_int64() -> None:
    """Folded Shape/Slice values keep ONNX's int64: ONNX's expanded SpaceToDepth/DepthToSpace
    divide a sliced shape by an int64 constant and reshape by the result. An int32 fold (what
    relax.const makes of int64 data unless told) met the int64 constant, the Div folded to
    float, and Reshape refused it where stock imports (found by the conformance lane)."""
    from onnx import TensorProto, helper, numpy_helper

    def const(name: str, value: list[int]) -> onnx.NodeProto:
        arr = numpy_helper.from_array(np.array(value, dtype="int64"))
        return helper.make_node("Constant", [], [name], value=arr)

    nodes = [
        const("zero", [0]),
        const("one", [1]),
        const("two", [2]),
        const("four", [4]),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Slice", ["shape", "zero", "one"], ["n"]),
        helper.make_node("Slice", ["shape", "one", "two"], ["c"]),
        helper.make_node("Div", ["c", "four"], ["c4"]),
        helper.make_node("Concat", ["n", "c4", "four", "one", "two"], ["new_shape"], axis=0),
        helper.make_node("Reshape", ["x", "new_shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "int64_shape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.random.default_rng(0).standard_normal((2, 8, 1, 2)).astype("float32")
    got = run_llvm(from_onnx(model), x)
    np.testing.assert_array_equal(got, x.reshape(2, 2, 4, 1, 2))
