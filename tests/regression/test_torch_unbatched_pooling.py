"""Patch: pooling a tensor without a batch dimension imports.

PyTorch's pools take an unbatched input: (C, L) for 1-D, (C, H, W) for 2-D, (C, D, H, W) for
3-D (a single image or sequence, and how torch.export decomposes a 1-D adaptive pool: an
unbatched 2-D one). The importer adds a batch dimension and removes it from the result, but
left both as un-normalized expressions: the next op's `shape_of` stopped the import ("The
input Expr of shape_of should be a Tensor", "Please convert 2 with `const` first"). On the
fork the average, max and adaptive average pools of every rank import unbatched and match
PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

F = torch.nn.functional
torch.manual_seed(0)

CASES = {
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 5), (8, 8)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, 3) + 1, (3, 8, 8)),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, 2) + 1, (2, 4, 4, 4)),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 2) + 1, (3, 8)),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2, 1) + 1, (3, 8, 8)),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, 2) + 1, (2, 4, 4, 4)),
    "max_pool1d": (lambda x: F.max_pool1d(x, 3) + 1, (3, 9)),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2) + 1, (3, 8, 8)),
    "max_pool3d": (lambda x: F.max_pool3d(x, 2) + 1, (2, 4, 4, 4)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_unbatched_pool_matches_pytorch(name: str) -> None:
    f, shape = CASES[name]
    got, want = eager_and_tvm(Lambda(f), torch.randn(*shape))
    assert got[0].shape == want[0].shape
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def test_batched_pool_as_before() -> None:
    got, want = eager_and_tvm(Lambda(lambda x: F.avg_pool2d(x, 2) + 1), torch.randn(2, 3, 8, 8))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
