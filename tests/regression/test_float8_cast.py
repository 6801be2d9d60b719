"""Patches cast-to-and-from-float8-exactly and import-castlike-float8-casts-as-onnx-defines-them:
casts to and from float8 compute the numbers numpy (ml_dtypes) and ONNX define.

On stock 0.26.0 every target without native float8 (CPUs, CUDA before sm_89) converts with TIR's
bit-moving legalization: float8_e4m3fn 0 reads back as 2^-7 and NaN as 1.5, 1e6 becomes -15,
and the FNUZ types are read and written with the wrong exponent bias. On the fork `relax.astype`
(topi.cast) converts exactly, ONNX's Cast saturates out-of-range values by default as ONNX says,
and rounds to e8m0 by its round_mode. Each is checked bit for bit, on llvm.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from tvm import relax

from .onnxrun import check, node_model, out
from .relaxrun import run_llvm

ml_dtypes = pytest.importorskip("ml_dtypes")

FLOAT8 = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"]
SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e6, -1e6, 0.3, -2.5, 464.0, 61440.0, 2.0**-10]


def _astype(shape: tuple[int, ...], src: str, dst: str) -> relax.Function:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(shape, src))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.astype(x, dst))
        bb.emit_func_output(y)
    return bb.get()


@pytest.mark.parametrize("dtype", FLOAT8)
def test_astype_to_float8_and_back(dtype: str) -> None:
    """float32 -> float8 -> float32 as ml_dtypes casts: the specials, and 2,000 values across
    the type's range, its subnormals included."""
    rng = np.random.default_rng(0)
    scaled = rng.standard_normal(2000) * np.exp2(rng.integers(-20, 17, 2000))
    x = np.concatenate([SPECIAL, scaled]).astype("float32")
    f8 = run_llvm(_astype(x.shape, "float32", dtype), x)
    assert f8.dtype == np.dtype(getattr(ml_dtypes, dtype))
    np.testing.assert_array_equal(f8.view("uint8"), x.astype(f8.dtype).view("uint8"))
    codes = np.arange(256, dtype="uint8").view(f8.dtype)
    back = run_llvm(_astype(codes.shape, dtype, "float32"), codes)
    np.testing.assert_array_equal(back, codes.astype("float32"))  # NaN equals NaN here


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("dst", ["FLOAT8E4M3FN", "FLOAT8E5M2FNUZ"])
def test_onnx_cast_saturates(dst: str, saturate: int) -> None:
    """ONNX's Cast to float8 and back: with saturate=1 (the default) 1e6 and infinity become
    the largest finite value, with 0 infinity or NaN; ONNX's reference computes the want."""
    to = getattr(TensorProto, dst)
    x = {"x": np.array(SPECIAL, dtype="float32")}
    model = node_model(helper.make_node("Cast", ["x"], ["y"], to=to, saturate=saturate), x, [], 21)
    model.graph.node.append(helper.make_node("Cast", ["y"], ["back"], to=TensorProto.FLOAT))
    model.graph.output.append(out("back"))
    check(model, x, rtol=0, atol=0)


@pytest.mark.parametrize("round_mode", ["up", "nearest"])
def test_onnx_cast_to_e8m0(round_mode: str) -> None:
    """ONNX's Cast to float8 e8m0 (a power of two): float32's exponent, rounded as round_mode
    says (stock rounds otherwise, and reads NaN as a number)."""
    x = {"x": np.array([0.124, 1.1, 1.5, 3.0, 6.0, np.nan, 1e-3, 5e5], dtype="float32")}
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E8M0, round_mode=round_mode)
    model = node_model(node, x, [], 24)
    model.graph.node.append(helper.make_node("Cast", ["y"], ["back"], to=TensorProto.FLOAT))
    model.graph.output.append(out("back"))
    check(model, x, rtol=0, atol=0)
