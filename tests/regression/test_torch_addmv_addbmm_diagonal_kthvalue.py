"""Patch: `addmv`, `addbmm`, `diagonal` and `kthvalue` import; `index_select` of a 0-d tensor.

Stock's exported-program importer has no converter for `aten.addmv`, `aten.addbmm`,
`aten.diagonal` (what `torch.diagonal`, `Tensor.diagonal` and `torch.trace`-like code give
under torch.export) or `aten.kthvalue`: "Unsupported function types". `index_select` of a 0-d
tensor, PyTorch's own first op-test sample, stops at import ("the input axis 0 is out of
range"). On the fork each imports and matches PyTorch: `alpha`/`beta` honoured, any offset
and pair of dims for `diagonal`, values and indices for `kthvalue` (inputs without ties, so
the index is unique).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

torch.manual_seed(0)
A, B = torch.randn(4, 3, 2), torch.randn(4, 2, 5)
DISTINCT = torch.randperm(30).reshape(5, 6).float() / 7

CASES = {
    "addmv": (torch.addmv, (torch.randn(3), torch.randn(3, 4), torch.randn(4))),
    "addmv_alpha_beta": (
        lambda x, m, v: torch.addmv(x, m, v, beta=0.5, alpha=2),
        (torch.randn(3), torch.randn(3, 4), torch.randn(4)),
    ),
    "addbmm": (torch.addbmm, (torch.randn(3, 5), A, B)),
    "addbmm_broadcast_beta_0": (
        lambda x, a, b: torch.addbmm(x, a, b, beta=0, alpha=-1),
        (torch.randn(5), A, B),
    ),
    "addbmm_bfloat16": (torch.addbmm, (torch.randn(3, 5).bfloat16(), A.bfloat16(), B.bfloat16())),
    "diagonal": (torch.diagonal, (torch.randn(4, 6),)),
    "diagonal_offset_last_first": (lambda x: torch.diagonal(x, 2, -1, 0), (torch.randn(3, 4, 6),)),
    "diagonal_below": (lambda x: x.diagonal(-1, 1, 2), (torch.randn(3, 4, 6),)),
    "kthvalue": (lambda x: torch.kthvalue(x, 2), (DISTINCT,)),
    "kthvalue_dim0_keepdim": (lambda x: torch.kthvalue(x, 3, 0, keepdim=True), (DISTINCT,)),
    "index_select_0d": (
        lambda x, i: torch.index_select(x, 0, i),
        (torch.tensor(1.5), torch.tensor([0])),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_imports_and_matches_pytorch(name: str) -> None:
    f, args = CASES[name]
    got, want = eager_and_tvm(Lambda(f), *args)
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    for g, w in zip(got, want, strict=True):
        tol = 2e-2 if g.dtype.itemsize == 2 else 1e-5
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)
