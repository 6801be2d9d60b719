"""Native patch: rounding float32 to bfloat16 keeps a NaN a NaN.

TIR's legalization of bfloat16 on CPUs rounds float32 to bfloat16 to nearest even by adding a
bias to the bits and shifting (`DTypeConversion`, C++). For a NaN the bias carried the low
payload bits into the exponent or the sign: 0x7FFFFFFF became -0.0, 0xFFFFFFFF 0.0, 0x7F800001
infinity, in every bfloat16 cast a model runs (a float32 tensor of NaNs read from data, cast
with `.to(torch.bfloat16)`). The NaNs arithmetic produces (0x7FC00000, 0xFFC00000) were not
affected. On the fork a NaN rounds to a quiet NaN, as PyTorch rounds it; other values round as
before. Checked through a PyTorch model (scalar and vector code: the CPU rules vectorize
bfloat16 casts) and a TIR cast.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import te

from .relaxrun import Lambda, import_torch, numpy_of, run_llvm

# NaNs with payloads (the first three were lost), then values whose rounding must not change:
# infinities, ties to even, the largest finite float32 (rounds to infinity), the least subnormal
BITS = [0x7FFFFFFF, 0xFFFFFFFF, 0x7F800001, 0xFFBFFFFF, 0x7FC00000, 0xFFC00000, 0x7FBFFFFF]
BITS += [0x7F800000, 0xFF800000, 0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00000001, 0x80000000]


def _values(n: int) -> np.ndarray:
    """BITS repeated to n values (whole vectors and a remainder)."""
    return np.resize(np.array(BITS, "uint32"), n).view("float32")


def _assert_rounded_as_pytorch(got: np.ndarray, x: np.ndarray) -> None:
    want = numpy_of(torch.from_numpy(x).to(torch.bfloat16)).astype("float32")
    got = got.astype("float32")
    nan = np.isnan(x)
    assert np.isnan(got[nan]).all(), f"NaNs rounded to {got[nan & ~np.isnan(got)]}"
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(np.signbit(got[nan]), np.signbit(x[nan]))


@pytest.mark.parametrize("n", [len(BITS), 67])
def test_a_model_s_bfloat16_cast_keeps_nans(n: int) -> None:
    x = _values(n)
    mod = import_torch(Lambda(lambda t: t.to(torch.bfloat16)), torch.from_numpy(x))
    _assert_rounded_as_pytorch(run_llvm(mod, x), x)


def test_a_tir_bfloat16_cast_keeps_nans() -> None:
    x = _values(len(BITS))
    a = te.placeholder(x.shape, "float32", name="a")
    b = te.compute(a.shape, lambda i: a[i].astype("bfloat16"), name="b")
    f = tvm.compile(te.create_prim_func([a, b]), target="llvm")
    out = tvm.runtime.empty(x.shape, "bfloat16", tvm.cpu())
    f(tvm.runtime.tensor(x), out)
    _assert_rounded_as_pytorch(out.numpy(), x)
