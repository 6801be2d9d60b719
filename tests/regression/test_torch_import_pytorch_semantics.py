"""Patch: `expand`, `cat` and rounding `div` import as PyTorch defines them (transformers
models stopped at import on stock: BART, CLIP's vision tower, DETR, and every decoder LM
that returns its key/value cache).

- `x.expand(batch, 1, -1)` of a 1-D tensor (CLIP's class embedding, BART's positions):
  `-1` keeps the input's dimension aligned from the right; stock indexed the input by the
  output's position ("IndexError: ShapeExpr index out of range").
- `torch.cat([empty, x])` where `empty` is a 1-D tensor of size 0 (the empty key/value cache
  transformers starts from) skips the empty tensor; stock stopped ("Concat expects all input
  tensors to have same ndim").
- `torch.div(x, 2, rounding_mode="floor")` of a float tensor (DETR's sine position
  embedding): the scalar takes the tensor's dtype; stock made it an int32 constant ("Binary
  operators must have the same datatype").
Each model imports, compiles for llvm and matches PyTorch on the fork.
"""

from __future__ import annotations

import numpy as np
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_llvm


class ClassToken(torch.nn.Module):
    """CLIP's embedding: a learned 1-D class token expanded to (batch, 1, width)."""

    def __init__(self) -> None:
        super().__init__()
        self.token = torch.nn.Parameter(torch.randn(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cls = self.token.expand(x.shape[0], 1, -1)
        return torch.cat([cls, x], dim=1)


class GrowingCache(torch.nn.Module):
    """A key cache that starts empty, as transformers' DynamicCache does."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("keys", torch.tensor([]), persistent=False)

    def forward(self, k: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.keys, k], dim=-2) * 2


class FloorHalf(torch.nn.Module):
    """DETR's `dim_t // 2` on a float tensor, and an int tensor floor-divided by a float."""

    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return torch.div(x, 2, rounding_mode="floor") + torch.div(i, 2.5, rounding_mode="floor")


def _import(model: torch.nn.Module, *args: torch.Tensor):  # type: ignore[no-untyped-def]
    with torch.no_grad():
        return from_exported_program(torch.export.export(model.eval(), args))


def test_expand_adds_leading_dimensions() -> None:
    torch.manual_seed(0)
    model, x = ClassToken(), torch.randn(3, 4, 8)
    got = run_llvm(_import(model, x), x.numpy())
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-6)


def test_cat_skips_an_empty_1d_tensor() -> None:
    torch.manual_seed(0)
    model, k = GrowingCache(), torch.randn(1, 2, 5, 4)
    got = run_llvm(_import(model, k), k.numpy())
    np.testing.assert_allclose(got, model(k).numpy(), rtol=1e-6)


def test_floor_division_by_a_python_scalar() -> None:
    x = torch.linspace(-5, 5, 21)
    i = torch.arange(-10, 11)
    model = FloorHalf()
    got = run_llvm(_import(model, x, i), x.numpy(), i.numpy())
    want = model(x, i).numpy()
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
