"""Patch: erfinv imports (a normal distribution's icdf: Gemma 3n's activation sparsity).

`torch.erfinv` (and `torch.distributions.Normal(...).icdf`, which is built on it) stopped at
import on stock: "Unsupported function types ['erfinv.default']". transformers' Gemma 3n keeps
the activations above a quantile of their normal fit, `Normal(0, 1).icdf(0.95)`, so every
Gemma 3n model stopped there. On the fork it is computed in float64 (Giles' approximation and
two Newton steps on erf) and rounded once to the input's dtype (float32 for integers): +-inf at
+-1, NaN outside [-1, 1], as PyTorch gives.
"""

from __future__ import annotations

import pytest
import torch

from .relaxrun import Lambda, assert_outputs_match, eager_and_tvm

# a step of each dtype: the fork rounds a float64 result once, PyTorch computes in the dtype
STEP = {torch.float32: 2.0**-23, torch.float64: 1e-10, torch.float16: 2.0**-10}


@pytest.mark.parametrize("dtype", list(STEP), ids=["float32", "float64", "float16"])
def test_erfinv_over_its_domain_is_pytorch_s(dtype: torch.dtype) -> None:
    grid = torch.linspace(-1, 1, 801, dtype=torch.float64)
    edges = torch.tensor([1 - 1e-7, -1 + 1e-7, 1e-30, 1.5, -1.5, float("nan")])
    x = torch.cat([grid, edges.double()]).to(dtype)
    got, want = eager_and_tvm(Lambda(torch.erfinv), x)
    assert_outputs_match(got, want, rtol=4 * STEP[dtype], atol=0.0)


def test_erfinv_of_integers_is_float32() -> None:
    got, want = eager_and_tvm(Lambda(torch.erfinv), torch.tensor([-2, -1, 0, 1, 2]))
    assert want[0].dtype == "float32"
    assert_outputs_match(got, want, rtol=1e-6, atol=0.0)


class Sparsity(torch.nn.Module):
    """Gemma 3n's activation sparsity: what lies above the 0.95 quantile of each row's
    normal fit."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normal = torch.distributions.normal.Normal(0, 1)
        multiplier = normal.icdf(torch.tensor(0.95, dtype=torch.float32))
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True, unbiased=False)
        return torch.nn.functional.relu(x - (mean + std * multiplier))


def test_gemma3n_activation_sparsity() -> None:
    torch.manual_seed(0)
    got, want = eager_and_tvm(Sparsity(), torch.randn(4, 256))
    assert_outputs_match(got, want, rtol=1e-5, atol=1e-5)
    assert 0 < (want[0] > 0).mean() < 0.2  # a few survive: the cut is at the quantile
