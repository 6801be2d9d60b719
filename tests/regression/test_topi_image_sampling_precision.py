"""Patch: image sampling computes in the data's precision.

A float16 or bfloat16 model that warps an image with `F.grid_sample` (spatial transformers,
optical flow, deformable attention) got a float32 tensor out of the kernel where the program
says float16, with coordinates rounded half in float16 and half in float32; a float64
`F.interpolate(mode="bilinear")` read its pixels and coordinates as float32 and was 1e-7 off.
On the fork the half-precision warp returns its dtype and PyTorch's values computed in float32
(PyTorch's own accumulation type), and the float64 upsample matches PyTorch's to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import eager_and_tvm, numpy_of


class Warp(torch.nn.Module):
    """An image warped by sampling coordinates, as optical-flow models do."""

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    def forward(self, image: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.grid_sample(image, grid, mode=self.mode, align_corners=False)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
def test_half_precision_grid_sample_keeps_its_dtype(dtype: torch.dtype, mode: str) -> None:
    image = torch.randn(2, 3, 24, 32).to(dtype)
    grid = (torch.rand(2, 7, 9, 2) * 2.2 - 1.1).to(dtype)
    got, _ = eager_and_tvm(Warp(mode).eval(), image, grid)
    assert str(got[0].dtype) == str(dtype).removeprefix("torch.")
    # PyTorch's result computed in float32 from the same half-precision values, then rounded
    with torch.no_grad():
        want = numpy_of(Warp(mode)(image.float(), grid.float()).to(dtype))
    steps = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}[dtype]
    scale = float(np.abs(want.astype(np.float32)).max())
    np.testing.assert_allclose(
        got[0].astype(np.float32), want.astype(np.float32), rtol=0, atol=2 * steps * scale
    )


@pytest.mark.parametrize("align_corners", [False, True])
def test_float64_bilinear_upsample_in_float64(align_corners: bool) -> None:
    class Upsample(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.interpolate(
                x, size=(19, 23), mode="bilinear", align_corners=align_corners
            )

    image = torch.randn(1, 3, 7, 11, dtype=torch.float64)
    got, want = eager_and_tvm(Upsample(), image)
    assert got[0].dtype == np.float64
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
