"""Patch: remainder and rounded division of half-precision tensors as PyTorch computes them.

PyTorch computes `remainder` of float16 and bfloat16 tensors in float32 and rounds once, and
`floor_divide` (`div(..., rounding_mode="floor")`) from the exact remainder, `fmod`. The
importer computed `a - floor(a / b) * b` in the tensor's dtype, rounding at each step (PyTorch's
op test `remainder.float16.2`: 0.914 where PyTorch and float64 give 0.910), and `floor(a / b)`,
which takes a quotient that `a / b` rounds up to an integer for that integer, on stock and
fork alike. On the
fork float16 results are PyTorch's bit for bit; bfloat16 floor division, which PyTorch itself
rounds at each step, is at least as close to the exact floor as PyTorch's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, assert_outputs_match, eager_and_tvm


def _operands(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    a = (torch.rand(64, 32, generator=g) * 200 - 100).to(dtype)
    b = (torch.rand(64, 32, generator=g) * 3 + 0.25).to(dtype)
    return a, b


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_remainder(dtype: torch.dtype) -> None:
    got, want = eager_and_tvm(Lambda(torch.remainder), *_operands(dtype))
    assert_outputs_match(got, want)


def test_float16_floor_division() -> None:
    got, want = eager_and_tvm(Lambda(torch.floor_divide), *_operands(torch.float16))
    assert_outputs_match(got, want)


def test_bfloat16_floor_division_no_less_exact_than_pytorch() -> None:
    a, b = _operands(torch.bfloat16)
    got, want = eager_and_tvm(Lambda(lambda x, y: torch.div(x, y, rounding_mode="floor")), a, b)
    exact = np.floor(a.double().numpy() / b.double().numpy())
    ours = np.abs(got[0].astype(np.float64) - exact)
    theirs = np.abs(want[0].astype(np.float64) - exact)
    assert got[0].dtype == want[0].dtype
    assert (ours <= theirs).all(), float((ours - theirs).max())
