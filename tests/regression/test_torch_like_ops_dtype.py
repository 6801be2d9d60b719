"""Patch: full_like, ones_like and zeros_like give the dtype they are asked for.

They ignored `dtype=` and gave the input's dtype. torch.export decomposes `torch.isreal(x)`
and `isposinf` of an integer tensor to `full_like(x, True, dtype=torch.bool)`, so those gave
the input's values instead of a mask, with no error; a model's `ones_like(ids,
dtype=torch.bool)` mask came out as int64. On the fork each matches PyTorch, dtype and values.
"""

from __future__ import annotations

import numpy as np
import torch

from .relaxrun import eager_and_tvm


class Masks(torch.nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        keep = torch.ones_like(ids, dtype=torch.bool) & (ids > 0)
        return keep, torch.isreal(x), torch.isposinf(ids), torch.zeros_like(x, dtype=torch.int64)


def test_like_ops_and_the_masks_they_make() -> None:
    x, ids = torch.randn(2, 5), torch.tensor([[3, 0, 5, 1, 0], [0, 2, 2, 9, 4]])
    got, want = eager_and_tvm(Masks(), x, ids)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
