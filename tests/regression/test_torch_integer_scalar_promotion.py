"""Patch: integer and bool tensors with Python numbers are computed in PyTorch's dtype.

The importer made a Python number operand a constant of the tensor's dtype, so with an
integer tensor a float was truncated: `torch.arange(5) + 0.5` gave [0, 1, 2, 3, 4], and
`x * 1.5`, `2.5 - x`, `x >= 0.5` and `clamp(x, 0.5, 2.5)` were silently wrong (PyTorch's own
op tests: `nn.functional.margin_ranking_loss` in int64). PyTorch computes these in float32 (a
bool tensor with an int in int64); the fork does too.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from .relaxrun import eager_and_tvm

OPS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "add": lambda x: x + 0.5,
    "mul": lambda x: x * 1.5,
    "rsub": lambda x: 2.5 - x,
    "compare": lambda x: (x >= 0.5).to(torch.int64),
    "sqrt-power": lambda x: x**0.5,
    "clamp": lambda x: torch.clamp(x, 0.5, 2.5),
    "bool-plus-int": lambda x: (x > 2) + 1,
    "bool-times-float": lambda x: (x > 2) * 2.5,
    # RoPE's inverse frequencies from integer positions, as some models write them
    "rope": lambda x: 1.0 / (10000 ** (x * 2 / 10)),
}


class Op(torch.nn.Module):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return OPS[self.name](x)


@pytest.mark.parametrize("name", list(OPS))
def test_integer_tensor_with_a_python_number_matches_pytorch(name: str) -> None:
    got, want = eager_and_tvm(Op(name), torch.arange(5))
    assert got[0].dtype == want[0].dtype
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


class MarginRanking(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.margin_ranking_loss(a, b, y, margin=0.5)


def test_margin_ranking_loss_of_integers_matches_pytorch() -> None:
    a, b = torch.tensor([3, 1, 4, 1, 5]), torch.tensor([2, 7, 1, 8, 2])
    got, want = eager_and_tvm(MarginRanking(), a, b, torch.tensor([1, -1, 1, -1, 1]))
    assert got[0].dtype == want[0].dtype
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
