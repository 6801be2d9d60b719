"""Patch: `torch.nonzero` (and `argwhere`, `nonzero(as_tuple=True)`) import.

Stock's exported-program importer has no converter for `aten.nonzero` ("Unsupported function
types ['nonzero.default']"), though Relax has the op (`masked_select` uses it): `argwhere`,
`nonzero(as_tuple=True)` and code that indexes with a mask's positions decompose to it. On
the fork it imports with its data-dependent row count and matches PyTorch: the indices in
row-major order, one row each, int64; a 0-d input gives rows of no index.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

X = torch.tensor([[0.0, 1.5, 0.0, 3.0], [2.0, 0.0, -1.0, 0.0], [0.0, 0.0, 0.0, 7.0]])

CASES = {
    "nonzero_2d": (torch.nonzero, X),
    "argwhere": (torch.argwhere, X),
    "as_tuple": (lambda x: torch.nonzero(x, as_tuple=True), X),
    "bool_1d": (torch.nonzero, X[0] > 0),
    "none_nonzero": (torch.nonzero, torch.zeros(2, 3)),
    "int64_3d": (torch.nonzero, (X.long() % 2).reshape(3, 2, 2)),
    "zero_dim": (torch.nonzero, torch.tensor(2.5)),
    "gather_by_position": (lambda x: x[torch.nonzero(x > 1, as_tuple=True)] * 2, X),
}


@pytest.mark.parametrize("name", list(CASES))
def test_nonzero_matches_pytorch(name: str) -> None:
    f, x = CASES[name]
    got, want = eager_and_tvm(Lambda(f), x)
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
