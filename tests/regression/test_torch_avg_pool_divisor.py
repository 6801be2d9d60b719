"""Patch: avg_pool's divisor_override divides each window's sum.

`F.avg_pool2d(x, 3, divisor_override=2)` is each 3x3 window's sum over 2 (a sum pool with a
scale, as some detection and counting heads use it); the importer ignored the divisor and gave
the mean, 4.5x smaller here, with no error. On the fork it matches PyTorch, with padding and
with ceil_mode, in 2-D and 3-D.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_llvm


class SumPool(torch.nn.Module):
    def __init__(self, ndim: int, **kwargs: object) -> None:
        super().__init__()
        self.pool = torch.nn.functional.avg_pool2d if ndim == 2 else torch.nn.functional.avg_pool3d
        self.kwargs = kwargs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x, divisor_override=2, **self.kwargs)


@pytest.mark.parametrize(
    "ndim, shape, kwargs",
    [
        (2, (1, 3, 9, 9), {"kernel_size": 3, "padding": 1}),
        (2, (2, 3, 9, 9), {"kernel_size": 4, "stride": (2, 3), "padding": 1, "ceil_mode": True}),
        (3, (1, 2, 5, 5, 5), {"kernel_size": (2, 3, 4), "stride": (1, 2, 2), "ceil_mode": True}),
    ],
)
def test_window_sums_over_the_divisor(ndim: int, shape: tuple[int, ...], kwargs: dict) -> None:
    torch.manual_seed(0)
    x = torch.randn(*shape)
    model = SumPool(ndim, **kwargs)
    with torch.no_grad():
        want = model(x).numpy()
        mod = from_exported_program(torch.export.export(model, (x,)))
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), want, rtol=1e-5, atol=1e-5)
