"""Patch: `torch.empty` and `view`/`reshape` to sizes that hold symbols import (BUGS: models
exported with a dynamic sequence length stopped at import).

- transformers' MoE layers (Mixtral, Qwen2-MoE) allocate their per-token output with
  `torch.empty` of the token count, a symbol with a dynamic length. Stock 0.26.0 passed the raw
  call arguments to `relax.op.zeros`: "Mismatched type on argument #0 when calling:
  `relax.ShapeExpr(...)`".
- GPT-BigCode's `query.view(*input_shape, -1, head_dim)` of a (1, 1, n, 64) tensor: the
  importer's identity-reshape check compared the sizes with `==`, which for a static 1 and the
  symbol n builds an expression whose truth is undefined ("Cannot use and / or / not operator
  to Expr").
On the fork both import and match PyTorch at every length.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program


class Scratch(torch.nn.Module):
    """A per-row buffer of the input's row count, filled, then combined with the input."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        buf = torch.empty(x.shape[0], 8, dtype=x.dtype).fill_(2.0)
        return buf * x[:, :1]


class SplitHeads(torch.nn.Module):
    """GPT-BigCode's view of a (1, 1, n, 64) query into heads of 16."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(1, x.shape[2], -1, 16) * 2


def _check(model: torch.nn.Module, example: torch.Tensor, dim: int, size: int) -> None:
    """`model` exported with `example`'s `dim` dynamic, run with that dim `size` long."""
    n = torch.export.Dim("n", min=1, max=64)
    with torch.no_grad():
        exported = torch.export.export(model, (example,), dynamic_shapes=({dim: n},))
    mod = from_exported_program(exported)
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    shape = list(example.shape)
    shape[dim] = size
    x = torch.randn(*shape)
    out = vm["main"](tvm.runtime.tensor(x.numpy()))
    got = (out if isinstance(out, tvm.runtime.Tensor) else out[0]).numpy()
    np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-6)


@pytest.mark.parametrize("rows", [1, 5, 33])
def test_symbolic_empty_matches(rows: int) -> None:
    _check(Scratch(), torch.randn(5, 3), 0, rows)


@pytest.mark.parametrize("tokens", [1, 9])
def test_view_to_symbolic_sizes_matches(tokens: int) -> None:
    _check(SplitHeads(), torch.randn(1, 1, 5, 64), 2, tokens)
