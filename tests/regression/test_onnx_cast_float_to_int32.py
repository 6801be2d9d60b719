"""Patch: an ONNX Cast from a float to 32-bit integers builds in a fused kernel.

The importer gives a float-to-int32 Cast its wrap-around as arithmetic: the value as int64,
`x % 2**32`, minus 2**32 where that is at least 2**31, then cast to int32. The fork fuses
elementwise chains into one kernel, and there TVM's simplifier turned `(int32)(m - 2**32)`
into an int32 constant 2**32 it cannot hold: "Literal value 4294967296 exceeds maximum of
int32" (`LowerIntrin`), so `Cast(to=INT32)` of a float did not build on the fork (upstream's
`test_cast[6-1]`, `[6-10]`); stock, which does not fuse them, built it. The int64 value is now
cast to 32 bits directly, which keeps its low 32 bits: the same wrap, in one op. The first test
reads the importer's program (stock spells the wrap out), the second runs it.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper
from tvm.relax.frontend.onnx import from_onnx

from .onnxrun import node_model, out, run

VALUES = np.array(
    [[0.0, 1.5, -2.7, 2147483647.0, 2147483648.0, 3e9, -3e9, 4294967300.0]], "float32"
)


def _model(to: int):
    cast = helper.make_node("Cast", ["a"], ["b"], to=to)
    return node_model(cast, {"a": VALUES}, [out("b", to)], opset=13)


def test_the_wrap_is_one_cast() -> None:
    mod = from_onnx(_model(TensorProto.INT32))
    assert "floor_mod" not in mod.script(), mod.script()


def test_float_to_int32_and_uint32_wrap_around() -> None:
    wide = np.trunc(VALUES.astype(np.float64)).astype(np.int64)
    for to, dtype in ((TensorProto.INT32, np.int32), (TensorProto.UINT32, np.uint32)):
        got = run(_model(to), {"a": VALUES})[0]
        np.testing.assert_array_equal(got, wide.astype(dtype))  # numpy wraps int64 -> 32 bits
        assert got.dtype == dtype
