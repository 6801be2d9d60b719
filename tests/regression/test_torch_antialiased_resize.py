"""Patch: antialiased bilinear interpolation computed as PyTorch computes it.

`F.interpolate(x, size, mode="bilinear", antialias=True)` (torchvision's `Resize` on tensors,
SigLIP 2's position embeddings) exports as `_upsample_bilinear2d_aa`. Stock TVM gives it to
plain bilinear resize: shrinking, where PyTorch filters over the whole scale, is 7.4 off on a
10 x 20 image shrunk to 3 x 3; with `align_corners=True` PyTorch places the samples elsewhere
and an enlargement is 1.0 off; both silently. A size read at run time (`shape.tolist()`) does
not import. The fork matches PyTorch in each case, in float32 and float64.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import numpy_of, run_llvm


class Resize(torch.nn.Module):
    def __init__(self, size: tuple[int, int], align_corners: bool = False) -> None:
        super().__init__()
        self.size, self.align_corners = size, align_corners

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.interpolate(
            x, size=self.size, mode="bilinear", align_corners=self.align_corners, antialias=True
        )


class ResizeTo(torch.nn.Module):
    """SigLIP 2's resize of its position grid to a patch grid read from a tensor."""

    def forward(self, x: torch.Tensor, shape: torch.Tensor) -> torch.Tensor:
        h, w = shape.tolist()
        torch._check(h > 0)
        torch._check(w > 0)
        return torch.nn.functional.interpolate(
            x, size=(h, w), mode="bilinear", align_corners=False, antialias=True
        )


def _matches(module: torch.nn.Module, *args: torch.Tensor, tol: float) -> None:
    with torch.no_grad():
        want = module(*args).numpy()
    mod = from_exported_program(torch.export.export(module, args))
    got = run_llvm(mod, *[numpy_of(a) for a in args])
    assert got.shape == want.shape and str(got.dtype) == str(args[0].dtype).removeprefix("torch.")
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "size, align_corners",
    [((3, 3), False), ((4, 40), False), ((3, 3), True), ((21, 43), True)],
    ids=["shrink", "shrink-one-axis", "shrink-align-corners", "enlarge-align-corners"],
)
def test_matches_pytorch(size: tuple[int, int], align_corners: bool) -> None:
    _matches(Resize(size, align_corners), torch.randn(2, 3, 10, 20), tol=1e-5)


def test_enlarging_matches_pytorch() -> None:
    _matches(Resize((16, 32)), torch.randn(1, 3, 10, 20), tol=1e-5)


def test_float64_matches_pytorch() -> None:
    # (PyTorch's CPU kernel has no half precisions: SigLIP 2 in bfloat16 resizes in float32)
    _matches(Resize((3, 7)), torch.randn(1, 3, 10, 20, dtype=torch.float64), tol=1e-12)


def test_run_time_size_matches_pytorch() -> None:
    x = torch.randn(1, 4, 16, 16)
    _matches(ResizeTo(), x, torch.tensor([4, 6]), tol=1e-5)
