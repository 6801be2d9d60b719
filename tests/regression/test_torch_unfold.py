"""Patch: `Tensor.unfold(dim, size, step)` imports.

Sliding windows over an axis (`x.unfold(1, size, step)`: local attention's chunks, InklingV2's
short convolutions, patch extraction) had no converter: "Unsupported function types
['unfold.default']" (PyTorch's op tests of `unfold` and `unfold_copy` in every dtype; the
registry suite's `inkling2_text`). On the fork the windows are gathered by their element
indices and match PyTorch exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import eager_and_tvm


class Windows(torch.nn.Module):
    def __init__(self, dim: int, size: int, step: int) -> None:
        super().__init__()
        self.dim, self.size, self.step = dim, size, step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.unfold(self.dim, self.size, self.step).sum(-1)


@pytest.mark.parametrize(
    ("shape", "dim", "size", "step"),
    [((2, 10, 3), 1, 4, 2), ((2, 10, 3), -2, 3, 3), ((2, 5, 6), 2, 2, 4), ((7,), 0, 7, 1)],
)
def test_windows_match_pytorch(shape: tuple[int, ...], dim: int, size: int, step: int) -> None:
    x = torch.randint(-5, 5, shape)
    got, want = eager_and_tvm(Windows(dim, size, step), x)
    np.testing.assert_array_equal(got[0], want[0])
