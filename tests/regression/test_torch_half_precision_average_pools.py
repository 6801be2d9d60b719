"""Patch: average pools of float16 and bfloat16 tensors sum in float32, as PyTorch does.

PyTorch accumulates a half-precision average pool's window in float32 and rounds the mean
once. TVM's pools sum in the input's dtype: a float16 global average pool (the head of a
float16 ResNet or MobileNet) of 4096 values near 4.5 came out 0.5 off, a 32 x 32 average
pool 0.29 off: wrong numbers with no error, on stock and on the fork before this patch. On the
fork each average pool (adaptive or not, 1-, 2- and 3-D) of a half-precision input is
computed in float32 and rounded once: within one step of the exact mean, as PyTorch's (where
PyTorch's CPU kernel itself sums in float32).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

F = torch.nn.functional
torch.manual_seed(0)

CASES = {
    "global_avg_pool_float16": (lambda x: F.adaptive_avg_pool2d(x, 1), (1, 8, 64, 64), "half"),
    "avg_pool2d_32_float16": (lambda x: F.avg_pool2d(x, 32), (1, 8, 64, 64), "half"),
    "adaptive_avg_pool1d_float16": (lambda x: F.adaptive_avg_pool1d(x, 1), (2, 4, 2048), "half"),
    "avg_pool1d_float16": (lambda x: F.avg_pool1d(x, 512), (2, 4, 2048), "half"),
    "adaptive_avg_pool3d_bfloat16": (
        lambda x: F.adaptive_avg_pool3d(x, 1),
        (1, 4, 16, 16, 16),
        "bfloat16",
    ),
    "adaptive_avg_pool3d_float16": (
        lambda x: F.adaptive_avg_pool3d(x, 2),
        (1, 2, 32, 32, 32),
        "half",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_half_precision_average_pool_rounds_the_exact_mean(name: str) -> None:
    f, shape, dtype = CASES[name]
    x = (torch.rand(*shape) + 4).to(getattr(torch, "float16" if dtype == "half" else dtype))
    got, want = eager_and_tvm(Lambda(f), x)
    assert got[0].dtype == want[0].dtype
    # one rounding of the mean: within one step of the dtype of the exact (float64) result.
    # (PyTorch's own float16 adaptive_avg_pool3d on CPU sums in float16: 4.0 for 4.5.)
    exact = f(x.double()).numpy()
    step = 2.0**-7 if dtype == "bfloat16" else 2.0**-10
    np.testing.assert_allclose(got[0].astype(np.float64), exact, rtol=step)


def test_float32_pool_as_before() -> None:
    x = torch.rand(1, 8, 64, 64) + 4
    got, want = eager_and_tvm(Lambda(lambda t: F.adaptive_avg_pool2d(t, 1)), x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
