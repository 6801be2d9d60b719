"""Patch: grid_sample reads PyTorch's [N, H_out, W_out, 2] grid.

`F.grid_sample(x, grid)` (spatial transformers, optical-flow warping, deformable attention)
takes its grid as [N, H_out, W_out, 2]; Relax's grid_sample takes [N, 2, H_out, W_out], and the
importer passed the grid unchanged: coordinates were read from the wrong axes and the result
had another shape, with no error. On the fork a warp by a flow field matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_llvm


class Warp(torch.nn.Module):
    """An image warped by a flow field, as optical-flow models do."""

    def forward(self, image: torch.Tensor, flow: torch.Tensor) -> torch.Tensor:
        n, _, h, w = image.shape
        ys = torch.linspace(-1, 1, h).view(1, h, 1, 1).expand(n, h, w, 1)
        xs = torch.linspace(-1, 1, w).view(1, 1, w, 1).expand(n, h, w, 1)
        grid = torch.cat([xs, ys], dim=-1) + flow
        return torch.nn.functional.grid_sample(image, grid, align_corners=True)


def test_a_flow_warp_matches_pytorch() -> None:
    torch.manual_seed(0)
    image, flow = torch.randn(2, 3, 6, 9), torch.randn(2, 6, 9, 2) * 0.1
    with torch.no_grad():
        want = Warp()(image, flow).numpy()
        mod = from_exported_program(torch.export.export(Warp(), (image, flow)))
    got = run_llvm(mod, image.numpy(), flow.numpy())
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
