"""Patch: `torch.add(x, y, alpha=a)`, `torch.sub(..., alpha=a)` and `torch.rsub(..., alpha=a)`
scale the second operand (the first, for rsub) by `alpha`.

torch.export keeps `alpha` as a keyword of `aten.add.Tensor` / `aten.sub.Tensor` /
`aten.rsub.Scalar`; both importers read only the two operands, so stock computes `x + y` for
`torch.add(x, y, alpha=2)`: a silent wrong number (PyTorch's `Tensor.add_(other, alpha=...)`
form is common in optimizer-style updates and in residual scalings). On the fork each matches
PyTorch, in float32 and in int64.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

CASES = {
    "add_alpha_2": lambda x, y: torch.add(x, y, alpha=2),
    "sub_alpha_3": lambda x, y: torch.sub(x, y, alpha=3),
    "rsub_alpha_half": lambda x, y: torch.rsub(x, y, alpha=0.5),
    "add_scalar_alpha": lambda x, y: torch.add(x, 1.5, alpha=-2) + y,
    "residual_scaling": lambda x, y: x.add(torch.relu(y), alpha=0.1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_alpha_scales_the_operand(name: str) -> None:
    torch.manual_seed(0)
    got, want = eager_and_tvm(Lambda(CASES[name]), torch.randn(4, 5), torch.randn(4, 5))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_integer_alpha_is_exact() -> None:
    x, y = torch.randint(-9, 9, (4, 5)), torch.randint(-9, 9, (4, 5))
    got, want = eager_and_tvm(Lambda(lambda a, b: torch.sub(a, b, alpha=-2)), x, y)
    np.testing.assert_array_equal(got[0], want[0])
