"""Patch: the Torch importer raises float tensors to 2, 3, -1, -2, 0.5 and -0.5 as PyTorch
does (performance issue: GPT-2's GELU).

PyTorch computes `x ** 3` of a float32 tensor as `x * x * x`, `x ** 2` as `x * x`, `x ** -1`
as `1 / x`, `x ** 0.5` as `sqrt(x)`: its kernels special-case these exponents. Stock imports
every one as `relax.power`, a scalar `powf` call per element: GPT-2's tanh GELU
(`0.5 * x * (1 + tanh(c * (x + 0.044715 * x ** 3)))`) spent 10% of the model's time in it,
and its cubes differ from PyTorch's in the last bit. On the fork they are the same
arithmetic, vectorized, and bit-identical to PyTorch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import tvm
from tvm import relax

from .relaxrun import import_torch, run_llvm


class NewGELU(torch.nn.Module):
    """GPT-2's activation (transformers' `NewGELUActivation`)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))


class Power(torch.nn.Module):
    def __init__(self, exponent: float) -> None:
        super().__init__()
        self.exponent = exponent

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x**self.exponent


def _ops(mod: tvm.IRModule) -> list[str]:
    ops: list[str] = []
    relax.analysis.post_order_visit(
        mod["main"], lambda e: ops.append(e.op.name) if isinstance(e, relax.Call) else None
    )
    return ops


def test_gelu_cube_is_multiplies() -> None:
    mod = import_torch(NewGELU(), torch.randn(4, 64))
    assert "relax.power" not in _ops(mod), _ops(mod)


@pytest.mark.parametrize("exponent", [2, 3.0, -1, -2.0])
def test_powers_are_bit_identical_to_pytorch(exponent: float) -> None:
    torch.manual_seed(0)
    x = torch.randn(8, 257) * 4
    got = run_llvm(import_torch(Power(exponent), x), x.numpy())
    np.testing.assert_array_equal(got, Power(exponent)(x).numpy())


@pytest.mark.parametrize("exponent", [0.5, -0.5])
def test_square_roots_match_pytorch(exponent: float) -> None:
    x = torch.rand(8, 257) * 9 + 0.01
    mod = import_torch(Power(exponent), x)
    assert "relax.power" not in _ops(mod), _ops(mod)
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), Power(exponent)(x).numpy(), rtol=3e-7)


def test_gelu_matches_pytorch() -> None:
    x = torch.randn(4, 64) * 3
    got = run_llvm(import_torch(NewGELU(), x), x.numpy())
    np.testing.assert_allclose(got, NewGELU()(x).numpy(), rtol=1e-6, atol=1e-6)
