"""Patch: antialiased bilinear downsampling is refused, not given plain bilinear's values.

`F.interpolate(x, size, mode="bilinear", antialias=True)` (torchvision's `Resize` on tensors)
filters over the whole scale when it shrinks an image; the importer gave it to plain bilinear
resize, 7.4 off on a 10 x 20 image shrunk to 3 x 3, with no error. On the fork shrinking stops
the import with an error naming the op; enlarging, where both filters agree, still imports and
matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_llvm


class Resize(torch.nn.Module):
    def __init__(self, size: tuple[int, int]) -> None:
        super().__init__()
        self.size = size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.interpolate(
            x, size=self.size, mode="bilinear", align_corners=False, antialias=True
        )


def test_shrinking_is_refused() -> None:
    exported = torch.export.export(Resize((3, 3)), (torch.randn(1, 3, 10, 20),))
    with pytest.raises(NotImplementedError, match="antialias"):
        from_exported_program(exported)


def test_enlarging_matches_pytorch() -> None:
    x = torch.randn(1, 3, 10, 20)
    with torch.no_grad():
        want = Resize((16, 32))(x).numpy()
        mod = from_exported_program(torch.export.export(Resize((16, 32)), (x,)))
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), want, rtol=1e-5, atol=1e-5)
