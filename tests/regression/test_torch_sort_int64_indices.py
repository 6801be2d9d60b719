"""Patch: sort and argsort give int64 indices, as PyTorch does.

The importer asked Relax's argsort for its default, int32 indices: the index output had
another dtype than PyTorch's, and a program combining it with int64 values (a gather offset,
a position) stopped at import on the dtype mismatch. On the fork both give int64.
"""

from __future__ import annotations

import numpy as np
import torch

from .relaxrun import eager_and_tvm


class Ranked(torch.nn.Module):
    """Each row's values in order, where they came from, and their flat positions."""

    def forward(self, x: torch.Tensor, row_starts: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values, order = torch.sort(x, dim=-1)
        return values, order, torch.argsort(x, dim=-1, descending=True) + row_starts[:, None]


def test_sort_and_argsort_indices_are_int64() -> None:
    x = torch.randperm(24, generator=torch.Generator().manual_seed(0)).float().reshape(4, 6)
    starts = torch.arange(4) * 6
    got, want = eager_and_tvm(Ranked(), x, starts)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
