"""Patch: adaptive pooling where one axis' windows are constant and another's vary.

`F.adaptive_avg_pool2d(x, (5, 4))` of an 8 x 8 map (8 -> 4: windows of 2; 8 -> 5: windows of 1
or 2 depending on the output row) was silently wrong on stock and on the fork, avg and max, 2-D
and 3-D: te.create_prim_func puts the constant-extent window in an outer block whose inner
block re-initializes the result at each of its steps, so only the last step's window is kept.
PyTorch's op tests of `adaptive_avg_pool3d` (an 8 x 8 x 8 map to 5 x 7 x 4) show it. The fork's
TOPI pools such a box one axis at a time (an average or maximum over a box is separable).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import eager_and_tvm

F = torch.nn.functional


class Pool(torch.nn.Module):
    def __init__(self, size: tuple[int, ...]) -> None:
        super().__init__()
        self.size = size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if len(self.size) == 2:
            return F.adaptive_avg_pool2d(x, self.size)
        return F.adaptive_avg_pool3d(x, self.size)


@pytest.mark.parametrize(
    "shape, size",
    [
        ((1, 4, 8, 8), (5, 4)),
        ((2, 3, 12, 8), (5, 2)),  # a non-square feature map to a fixed grid
        ((1, 2, 8, 8, 8), (5, 7, 4)),  # PyTorch's op test
        ((8, 8, 8, 8), (5, 7, 4)),  # unbatched
    ],
)
def test_adaptive_avg_pool_matches_pytorch(shape: tuple[int, ...], size: tuple[int, ...]) -> None:
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    got, want = eager_and_tvm(Pool(size), x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
