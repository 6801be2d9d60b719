"""Patch: tensor indexing with negative indices reads what PyTorch reads (BUGS: Falcon returned
NaN; a silently wrong result).

Falcon's multi-query attention splits its fused projection with `qkv[..., [-2], :]` and
`qkv[..., [-1], :]`. Stock 0.26.0 imports `aten.index.Tensor` as `take(mode="fast")` (or
`index_tensor`) on the indices as they are, so -1 reads before the start of the buffer:
garbage, NaN or zeros, different from run to run. On the fork negative indices count from the
end of their dimension, for constant indices (folded at import) and run-time ones.
"""

from __future__ import annotations

import numpy as np
import torch
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import run_llvm


class SplitHeads(torch.nn.Module):
    """Falcon's multi-query split: query heads, then the key and value heads by -2 and -1."""

    def forward(self, qkv: torch.Tensor) -> torch.Tensor:
        q, k, v = qkv[..., :-2, :], qkv[..., [-2], :], qkv[..., [-1], :]
        return q.sum(-2, keepdim=True) * 0.5 + k * 2 + v


class Gather(torch.nn.Module):
    """Rows picked by run-time indices, some negative, and a 2-D pick of both axes."""

    def forward(self, x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return x[rows] * x[rows, rows][:, None]


def _import(model: torch.nn.Module, *args: torch.Tensor):  # type: ignore[no-untyped-def]
    with torch.no_grad():
        return from_exported_program(torch.export.export(model.eval(), args))


def test_constant_negative_indices() -> None:
    torch.manual_seed(0)
    qkv = torch.randn(1, 16, 6, 8)
    got = run_llvm(_import(SplitHeads(), qkv), qkv.numpy())
    np.testing.assert_allclose(got, SplitHeads()(qkv).numpy(), rtol=1e-6, atol=1e-6)


def test_runtime_negative_indices() -> None:
    torch.manual_seed(0)
    x, rows = torch.randn(5, 5), torch.tensor([-1, 0, -5, 2])
    got = run_llvm(_import(Gather(), x, rows), x.numpy(), rows.numpy())
    np.testing.assert_allclose(got, Gather()(x, rows).numpy(), rtol=1e-6)
