"""Patch: a tensor filled with infinity or NaN compiles.

`torch.full_like(scores, float("-inf"))`, the start of a mask or of a router's sparse scores
(Llama 4's MoE router fills with -inf and scatters its top-k in), imported as `R.full_like`
and failed in legalization on stock: TOPI's `full` checked its dtype with `"float" in dtype`,
and Relax hands it a PrimType ("argument of type 'PrimType' is not iterable"). On the fork it
compiles and matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch

from .relaxrun import eager_and_tvm


class MaskedScores(torch.nn.Module):
    """Scores kept where a mask allows, -inf elsewhere, then a softmax."""

    def forward(self, scores: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        masked = torch.where(keep, scores, torch.full_like(scores, float("-inf")))
        return torch.softmax(masked, dim=-1)


def test_a_mask_filled_with_minus_infinity_matches_pytorch() -> None:
    scores = torch.randn(3, 6)
    keep = torch.rand(3, 6) > 0.4
    keep[:, 0] = True
    got, want = eager_and_tvm(MaskedScores(), scores, keep)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_nan_and_infinity_fills() -> None:
    class Fills(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return torch.full_like(x, float("inf")), torch.full_like(x, float("nan"))

    got, want = eager_and_tvm(Fills(), torch.randn(2, 3))
    np.testing.assert_array_equal(got[0], want[0])
    assert np.isnan(got[1]).all()
