"""Patch: float32 exp on LLVM is vector code, not one libm call a lane (performance issue 19).

On stock 0.26.0 every float32 `exp` compiled for `llvm` is LLVM's exp intrinsic, which LLVM
turns into one libm `expf` call per lane: a sigmoid, SiLU, softmax or tanh runs lane by lane
(EfficientNet-B0 spent a quarter of its time in its SiLUs). On the fork float32 exp is a range
reduction and a polynomial LLVM vectorizes. The module's LLVM IR is checked (no exp intrinsic,
no `expf` call), and the numbers against NumPy in float64, NaN, infinities, overflow and
denormal results included, and a softmax and SiLU model against PyTorch; the speed is measured
by `make bench-models`, not here.
"""

from __future__ import annotations

import numpy as np
import torch
import tvm
from tvm.script import tirx as T

from .relaxrun import import_torch, run_llvm


@T.prim_func
def _exp8(a: T.Buffer((256,), "float32"), b: T.Buffer((256,), "float32")):
    for i0 in range(32):
        for i1 in T.vectorized(8):
            b[i0 * 8 + i1] = T.exp(a[i0 * 8 + i1])


def test_vector_exp_calls_no_libm_and_matches_numpy() -> None:
    lib = tvm.tirx.build(tvm.IRModule({"main": _exp8}), target="llvm")
    ll = lib.inspect_source("ll")
    assert "llvm.exp." not in ll and "expf" not in ll, "exp lowered to one libm call a lane"
    special = [np.nan, np.inf, -np.inf, 0.0, 88.72, 88.73, -87.3, -103.9, -110.0]
    rng = np.random.default_rng(0)
    x = np.concatenate([special, rng.uniform(-100, 88, 256 - len(special))]).astype("float32")
    a, b = tvm.runtime.tensor(x), tvm.runtime.tensor(np.zeros(256, "float32"))
    lib["main"](a, b)
    got = b.numpy()
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 0.0 and got[5] == np.inf
    assert 0 < got[7] < 2**-126  # a denormal result, as expf gives
    exact = np.exp(x[3:].astype("float64"))
    finite = np.isfinite(exact.astype("float32"))
    ulp = np.spacing(np.maximum(np.abs(exact[finite]), 2**-126).astype("float32"))
    assert np.all(np.abs(got[3:][finite] - exact[finite]) <= 2 * ulp)


class SoftmaxSiLU(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc(x) * 4, dim=-1) + torch.nn.functional.silu(x * 8)


def test_softmax_and_silu_match_pytorch() -> None:
    torch.manual_seed(0)
    model, x = SoftmaxSiLU().eval(), torch.randn(48, 64) * 3
    with torch.no_grad():
        expected = model(x).numpy()
    got = run_llvm(import_torch(model, x), x.numpy())
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


class Float64Exp(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x)
        return e * (e + 2)


def test_float64_exp_still_compiles_vectorized() -> None:
    """Other types keep llvm.exp: a vectorized float64 exp compiles and matches (a rule that
    handed it back unlowered stopped codegen with "unknown intrinsic tirx.exp"; stock compiles
    it, so this holds on both sides)."""
    x = torch.linspace(-30, 5, 64, dtype=torch.float64).reshape(4, 16)
    model = Float64Exp().eval()
    with torch.no_grad():
        expected = model(x).numpy()
    got = run_llvm(import_torch(model, x), x.numpy())
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300)
