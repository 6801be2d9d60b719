"""Patch: `exp2`, `fmax`, `fmin`, `copysign`, `signbit` and `round(decimals=)` import.

Stock's exported-program importer has no converter for `aten.exp2`, `aten.fmax`,
`aten.fmin`, `aten.copysign` or `aten.signbit`, nor for `aten.round.decimals` (its `round`
converter handles `decimals` but only `round.default` was mapped): "Unsupported function
types". On the fork each imports and matches PyTorch in every dtype PyTorch's op tests give
it: `fmax`/`fmin` take the other value where one is NaN, `copysign` and `signbit` read the
sign bit (-0.0 included), integer inputs give PyTorch's float results, and negative
`decimals` round as PyTorch does (divide, round, multiply).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

X = torch.tensor([-2.5, -0.0, 0.0, 1.25, float("nan"), 3.0, 1234.5678, -0.125])
Y = torch.tensor([1.0, float("nan"), -1.0, -0.0, 2.0, -5.0, 7.0, float("nan")])
N = torch.arange(-4, 4)

CASES = {
    "exp2_float32": (torch.exp2, (X,)),
    "exp2_int64": (torch.exp2, (N,)),
    "exp2_bfloat16": (torch.exp2, (X.bfloat16(),)),
    "fmax_float32": (torch.fmax, (X, Y)),
    "fmin_float32": (torch.fmin, (X, Y)),
    "fmax_int64_and_float32": (torch.fmax, (N, Y)),
    "fmin_bfloat16": (torch.fmin, (X.bfloat16(), Y.bfloat16())),
    "fmax_bool": (torch.fmax, (X > 0, Y > 0)),
    "fmin_int64": (torch.fmin, (N, N.flip(0))),
    "copysign_tensor": (torch.copysign, (Y, X)),
    "copysign_negative_zero": (lambda a: torch.copysign(a, -0.0), (X,)),
    "copysign_int64": (torch.copysign, (N, X)),
    "signbit_float32": (torch.signbit, (X,)),
    "signbit_float16": (torch.signbit, (X.half(),)),
    "signbit_int64": (torch.signbit, (N,)),
    "round_decimals_2": (lambda a: torch.round(a, decimals=2), (X,)),
    "round_decimals_neg_2": (lambda a: torch.round(a, decimals=-2), (X * 100,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_imports_and_matches_pytorch(name: str) -> None:
    f, args = CASES[name]
    got, want = eager_and_tvm(Lambda(f), *args)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want, strict=True):
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        # the sign of zeros too (signbit and copysign are about it); a NaN's sign is not
        number = ~np.isnan(w64)
        np.testing.assert_array_equal(np.signbit(g64)[number], np.signbit(w64)[number])
        tol = 1e-2 if g.dtype.itemsize == 2 else 1e-6
        np.testing.assert_allclose(g64, w64, rtol=tol, atol=0)
