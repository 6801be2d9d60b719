"""Patch: float32 erf on LLVM is vector code, not one libm call a lane (performance issue 19).

On stock 0.26.0 every `erf` compiled for `llvm` calls libm's `erff`, one lane at a time: the
GELU of each transformer and ConvNeXt MLP (x * (1 + erf(x / sqrt(2))) / 2) ran 15x to 25x
slower than PyTorch's, and MaxViT spent 30% of its time there. On the fork float32 erf is a
rational approximation LLVM vectorizes. The module's LLVM IR is checked (no `erff` call), and
the numbers against `math.erf` and PyTorch's GELU, NaN and infinities included; the speed is
measured by `make bench-models`, not here.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import tvm
from tvm.script import tirx as T

from .relaxrun import import_torch, run_llvm
from .test_cpu_default_schedule import Tokens


@T.prim_func
def _erf8(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    for i0 in range(8):
        for i1 in T.vectorized(8):
            b[i0 * 8 + i1] = T.erf(a[i0 * 8 + i1])


def _inputs() -> np.ndarray:
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 3.99, 4.01, -10.0, 100.0]
    return np.concatenate([special, np.linspace(-5, 5, 64 - len(special))]).astype("float32")


def test_vector_erf_calls_no_libm_and_matches_math_erf() -> None:
    lib = tvm.tirx.build(tvm.IRModule({"main": _erf8}), target="llvm")
    assert "erff" not in lib.inspect_source("ll"), "erf lowered to one libm call a lane"
    x = _inputs()
    a, b = tvm.runtime.tensor(x), tvm.runtime.tensor(np.zeros(64, "float32"))
    lib["main"](a, b)
    got = b.numpy()
    assert np.isnan(got[0])
    expected = np.array([math.erf(v) for v in x[1:].astype("float64")])
    np.testing.assert_allclose(got[1:], expected, rtol=0, atol=5e-7)


def test_gelu_model_matches_pytorch() -> None:
    """A transformer MLP (Linear, GELU in its erf form, Linear) against PyTorch."""
    torch.manual_seed(0)
    model, x = Tokens().eval(), torch.randn(37, 64) * 3
    with torch.no_grad():
        expected = model(x).numpy()
    got = run_llvm(import_torch(model, x), x.numpy())
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
