"""Patch: advanced indexing beside whole dimensions (BUGS: a static KV cache's update
`cache[:, :, positions] = values` stopped at import with "IndexPut requires the number of index
tensors (3) to match the data tensor dimensions (4)", and `x[..., i, i]` silently returned an
(n, n) block per batch instead of the diagonal).

PyTorch's indices may leave dimensions whole (`None`, or left out at the end); the importer
now gives every dimension an index placed where PyTorch puts it, zipped as NumPy does, for
reads (`aten.index`) and writes (`aten.index_put`). Each case runs against PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch

from .relaxrun import run_llvm


def _check(module: torch.nn.Module, *args: torch.Tensor) -> None:
    from tvm.relax.frontend.torch import from_exported_program

    with torch.no_grad():
        mod = from_exported_program(torch.export.export(module, args))
        expected = module(*[a.clone() for a in args]).numpy()
    got = run_llvm(mod, *[a.numpy() for a in args])
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6)


class CacheUpdate(torch.nn.Module):
    def forward(self, cache: torch.Tensor, positions: torch.Tensor, values: torch.Tensor):
        cache = cache.clone()
        cache[:, :, positions] = values
        return cache


class Diagonal(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return x[..., i, i]


class RowsWritten(torch.nn.Module):
    def forward(self, x: torch.Tensor, rows: torch.Tensor, values: torch.Tensor):
        x = x.clone()
        x[rows] = values
        return x


def test_cache_update_at_positions() -> None:
    _check(CacheUpdate(), torch.zeros(1, 2, 16, 4), torch.tensor([9, 3]), torch.randn(1, 2, 2, 4))


def test_diagonal_read() -> None:
    _check(Diagonal(), torch.randn(2, 3, 5, 5), torch.tensor([4, 0, 2]))


def test_rows_written_whole() -> None:
    _check(RowsWritten(), torch.zeros(6, 3), torch.tensor([5, 1]), torch.randn(2, 3))
