"""Patch: `torch.scatter_reduce` and `torch.scatter_add` import.

Neither had a converter ("Unsupported function types ['scatter_reduce.two']"): PyTorch's op
tests of `scatter_reduce` (sum, prod, mean, amax, amin) and `scatter_add` stopped at import,
and so did transformers' TAPAS, whose segmented reductions (the mean of each table cell's
tokens) are `zeros(...).scatter_reduce(0, segment_ids, values, "mean", include_self=False)`.
On the fork each reduction matches PyTorch, with and without `include_self`, for float and
integer tensors (an integer mean rounds down as torch's does).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import eager_and_tvm


class SegmentReduce(torch.nn.Module):
    """TAPAS-style: reduce each token's vector into its segment's row."""

    def __init__(self, reduce: str, include_self: bool) -> None:
        super().__init__()
        self.reduce, self.include_self = reduce, include_self

    def forward(self, values: torch.Tensor, segments: torch.Tensor) -> torch.Tensor:
        index = segments[:, None].expand(-1, values.shape[1])
        out = torch.zeros(4, values.shape[1], dtype=values.dtype)
        return out.scatter_reduce(0, index, values, self.reduce, include_self=self.include_self)


@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_segment_reductions_match_pytorch(reduce: str, include_self: bool) -> None:
    gen = torch.Generator().manual_seed(0)
    values = torch.randn(9, 6, generator=gen)
    segments = torch.tensor([0, 0, 1, 3, 3, 3, 1, 0, 3])  # segment 2 gets nothing
    got, want = eager_and_tvm(SegmentReduce(reduce, include_self), values, segments)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_integer_mean_rounds_as_torch_does() -> None:
    values = torch.tensor([[3], [4], [-7], [2], [-1]])
    segments = torch.tensor([0, 0, 1, 1, 3])
    got, want = eager_and_tvm(SegmentReduce("mean", False), values, segments)
    np.testing.assert_array_equal(got[0], want[0])


def test_scatter_add() -> None:
    class ScatterAdd(torch.nn.Module):
        def forward(self, x: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
            return torch.scatter_add(x, 1, index, src)

    index = torch.tensor([[0, 0, 2], [1, 3, 1]])
    got, want = eager_and_tvm(ScatterAdd(), torch.randn(2, 4), index, torch.randn(2, 3))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
