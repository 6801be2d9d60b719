"""Patch: group norms of bfloat16 tensors compute in float32.

Relax's `nn.group_norm` asks for float data by type code and bfloat16 has its own, so a
bfloat16 model with a GroupNorm (BiT, PoolFormer, diffusion U-Nets, GroupNorm ResNets) stopped
at import: "group_norm expects that data must be float, but got T.bfloat16". On the fork the
importer computes a bfloat16 group norm in float32, as PyTorch does on CPU, and rounds once;
a small conv net with group norms matches PyTorch's bfloat16 run at bfloat16's precision.
"""

from __future__ import annotations

import numpy as np
import torch

from .relaxrun import eager_and_tvm


class ConvGroupNorm(torch.nn.Module):
    """Two conv + GroupNorm + ReLU blocks, as BiT's stem and stages are built."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1),
            torch.nn.GroupNorm(2, 8),
            torch.nn.ReLU(),
            torch.nn.Conv2d(8, 8, 3, padding=1),
            torch.nn.GroupNorm(4, 8),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def test_a_bfloat16_group_norm_net_matches_pytorch() -> None:
    model = ConvGroupNorm().bfloat16().eval()
    x = torch.randn(2, 3, 12, 12).bfloat16()
    got, want = eager_and_tvm(model, x)
    assert str(got[0].dtype) == "bfloat16"
    g, w = got[0].astype(np.float64), want[0].astype(np.float64)
    # PyTorch and the fork round the same float32 norm once; the convolutions before it may
    # round differently by a step, which the norm scales by at most its 1/std
    assert float(np.abs(g - w).max() / np.abs(w).max()) <= 5 * 2.0**-8


def test_a_bfloat16_group_norm_matches_pytorch() -> None:
    model = torch.nn.GroupNorm(3, 6).bfloat16().eval()
    with torch.no_grad():
        model.weight.normal_()
        model.bias.normal_()
    got, want = eager_and_tvm(model, torch.randn(2, 6, 5, 7).bfloat16())
    assert str(got[0].dtype) == "bfloat16"
    # both round the same float32 computation once: a step apart at most
    np.testing.assert_allclose(
        got[0].astype(np.float32), want[0].astype(np.float32), rtol=2.0**-7, atol=2.0**-7
    )
