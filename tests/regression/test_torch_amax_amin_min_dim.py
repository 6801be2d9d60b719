"""Patch: import amax, amin and min.dim from torch.export.

`torch.amax` / `torch.amin` (the max or min over some dimensions, without indices: a stable
softmax's `x - x.amax(-1, keepdim=True)`, sliding-window masks) and `torch.min(x, dim)` (values
and the index of the first smallest) stopped at import on stock ("Unsupported function types
['amax.default']"); `max.dim` was supported, `min.dim` not. On the fork each matches PyTorch,
the indices exactly (the first of tied values, as PyTorch documents).
"""

from __future__ import annotations

import numpy as np
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_llvm


class StableSoftmax(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.amax(dim=-1, keepdim=True)
        return shifted.exp() / shifted.exp().sum(-1, keepdim=True) + x.amin(dim=(0, 1))


class ArgMinFirst(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, indices = torch.min(x, dim=1)
        return indices + (values > 0).to(torch.int64)


def _run(model: torch.nn.Module, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    with torch.no_grad():
        want = model(x).numpy()
        mod = from_exported_program(torch.export.export(model, (x,)))
    return run_llvm(mod, x.numpy()), want


def test_amax_and_amin() -> None:
    got, want = _run(StableSoftmax(), torch.randn(2, 6, 10) * 30)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_min_dim_gives_the_first_index_of_ties() -> None:
    x = torch.tensor([[3.0, -1.0, 2.0, -1.0], [0.0, 0.0, 5.0, 0.0], [7.0, 8.0, 9.0, 6.5]])
    got, want = _run(ArgMinFirst(), x)
    assert got.dtype == want.dtype == np.int64
    np.testing.assert_array_equal(got, want)
