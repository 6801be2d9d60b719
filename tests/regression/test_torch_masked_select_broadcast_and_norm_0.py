"""Patch: `masked_select` with a mask larger than the data, and norms of order 0, import.

`torch.masked_select(data, mask)` broadcasts the two together; the importer broadcast only
the mask to the data's shape, so a mask with more dimensions than the data stopped the import
("broadcast_to expects the input shape to have the number of ndim at least as the input
tensor's"). `torch.norm(x, 0)` and `linalg.vector_norm(x, 0)` count the non-zero elements;
the importer computed `sum(|x| ** p) ** (1 / p)` and stopped on `1 / 0` (ZeroDivisionError).
On the fork both import and match PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

X = torch.tensor([[0.0, 1.5, 0.0, 3.0], [2.0, 0.0, -1.0, 0.0], [0.0, 0.0, 0.0, 7.0]])

CASES = {
    "masked_select_mask_larger": (
        torch.masked_select,
        (torch.tensor([1.0, -2.0, 3.0, 4.0]), X > 0),
    ),
    "masked_select_both_broadcast": (
        torch.masked_select,
        (torch.arange(3.0).reshape(3, 1), torch.tensor([True, False, True, True])),
    ),
    "masked_select_same_shape": (torch.masked_select, (X, X > 1)),
    "norm_0": (lambda x: torch.norm(x, 0), (X,)),
    "vector_norm_0_dim": (lambda x: torch.linalg.vector_norm(x, 0, dim=1), (X,)),
    "vector_norm_0_keepdim_bfloat16": (
        lambda x: torch.linalg.vector_norm(x, 0, dim=0, keepdim=True),
        (X.bfloat16(),),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_pytorch(name: str) -> None:
    f, args = CASES[name]
    got, want = eager_and_tvm(Lambda(f), *args)
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.astype(np.float64), w.astype(np.float64))
