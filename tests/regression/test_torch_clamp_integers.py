"""Patch: integer tensors clamped with one bound keep their values.

`clamp_min(x, lo)`, `clamp_max(x, hi)` and `clamp(x, min=...)` import as `clip` with the
missing bound as an infinity; cast to int64 that infinity is the smallest int64, so every
element of an integer tensor came out as -2**63, with no error. A bound tensor that broadcasts
the input (`clamp_max(x[5, 1], hi[5])`) failed at import. On the fork both match PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_llvm


class ClampPositions(torch.nn.Module):
    """Positions kept inside a window, as relative-position attention does with int64 ids."""

    def forward(self, ids: torch.Tensor, lo: torch.Tensor) -> torch.Tensor:
        return torch.clamp_min(ids, lo) + torch.clamp_max(ids, 3) + torch.clamp(ids, min=-2)


class ClampBroadcast(torch.nn.Module):
    def forward(self, x: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
        return torch.clamp_max(x, hi)


def _check(model: torch.nn.Module, *args: torch.Tensor) -> None:
    with torch.no_grad():
        want = model(*args).numpy()
        mod = from_exported_program(torch.export.export(model, args))
    got = run_llvm(mod, *[a.numpy() for a in args])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_int64_clamp_with_one_bound() -> None:
    _check(ClampPositions(), torch.arange(-8, 8).reshape(4, 4), torch.tensor(1))


def test_a_bound_tensor_broadcasts_the_input() -> None:
    _check(ClampBroadcast(), torch.randn(5, 1), torch.randn(5))
