"""Patch: `torch.var_mean` imports.

`aten.var_mean.correction` had no converter ("Unsupported function types
['var_mean.correction']"): PyTorch's op tests of `var_mean` (16 cases) stopped at import, and
so does any model that normalizes by hand with `var, mean = torch.var_mean(x, -1,
keepdim=True)`. On the fork it is the pair of `var.correction` and `mean.dim`, as PyTorch
computes them, with and without `keepdim`, over every axis or some, any correction.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import eager_and_tvm


class HandNorm(torch.nn.Module):
    def __init__(self, **kwargs: object) -> None:
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.var_mean(x, **self.kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"dim": -1, "keepdim": True},
        {"dim": (0, 2), "correction": 0},
        {"dim": 1, "correction": 2},
    ],
    ids=["all", "last_keepdim", "two_axes_biased", "correction_2"],
)
def test_var_mean_matches_pytorch(kwargs: dict[str, object]) -> None:
    x = torch.randn(3, 4, 6, generator=torch.Generator().manual_seed(0))
    got, want = eager_and_tvm(HandNorm(**kwargs), x)
    assert len(got) == 2
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
