"""Patch: `Tensor.index_reduce` imports, every reduction, with and without `self`.

`x.index_reduce(dim, index, source, reduce, include_self)` reduces the slices of `x` along
`dim` that `index` names with `source`'s slices (`prod`, `mean`, `amax`, `amin`). Stock's
exported-program importer has no converter for it ("Unsupported function types
['index_reduce.default']"). On the fork it imports as a scatter_reduce whose index is
broadcast across `source`'s other dimensions, repeated indices reduced together, and
matches PyTorch, 0-d tensors included (PyTorch's own first samples).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

GEN = torch.Generator().manual_seed(0)
X = torch.randn(3, 5, generator=GEN) * 5
SOURCE = torch.randn(3, 4, generator=GEN) * 5
INDEX = torch.tensor([0, 4, 0, 2])  # 0 twice: two slices reduced into one


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_matches_pytorch(reduce: str, include_self: bool) -> None:
    f = Lambda(lambda x, i, s: x.index_reduce(1, i, s, reduce, include_self=include_self))
    got, want = eager_and_tvm(f, X, INDEX, SOURCE)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_index_reduce_along_dim_0_int64() -> None:
    f = Lambda(lambda x, i, s: x.index_reduce(0, i, s, "amax"))
    x, s = torch.arange(12).reshape(4, 3), torch.arange(6).reshape(2, 3) * 3
    got, want = eager_and_tvm(f, x, torch.tensor([3, 1]), s)
    np.testing.assert_array_equal(got[0], want[0])


def test_index_reduce_of_0d_tensors() -> None:
    f = Lambda(lambda x, i, s: x.index_reduce(0, i, s, "prod"))
    got, want = eager_and_tvm(f, torch.tensor(1.5), torch.tensor([0]), torch.tensor(-2.0))
    assert got[0].shape == want[0].shape == ()
    np.testing.assert_allclose(got[0], want[0])
