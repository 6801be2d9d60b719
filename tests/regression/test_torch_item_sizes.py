"""Patch: an integer tensor's `.item()` as the size torch.export traced it as.

torch.export traces `counts.tolist()` and `n.item()` of an integer tensor as symbolic sizes
(`u0`) that later ops take as sizes: MoE layers split their tokens by how many each expert got
(`split(x, counts.tolist())`, JetMoE), Reformer slices its axial position table to a bound
read from data. Stock's importer kept the item a 0-d tensor, so none of these imported: the
split got tensors as sizes, Python's `==` on two items was unsupported ("Unsupported function
types ['eq']"), a slice took a tensor as its bound. A tensor times a symbolic size
(`x * (n // 2)`) did not import either ("ValueError" on a PrimExpr constant). On the fork the
item is read at run time into a size (`tensor_to_shape`, `match_cast`), a split by run-time
sizes is a slice each, and each of these matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program

from .relaxrun import assert_outputs_match, eager_and_tvm


class SplitByCounts(torch.nn.Module):
    """Tokens split by their expert's count, each part scaled by its expert (an MoE layer)."""

    def forward(self, x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        parts = torch.split(x, counts.tolist())
        return torch.cat([p * (i + 1) for i, p in enumerate(parts)])


class SliceToItem(torch.nn.Module):
    """The rows of a table up to a bound read from data, then a sum over them."""

    def forward(self, table: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        rows = (n.max().item() + 4) // 4
        torch._check(rows <= table.shape[0])
        return table[:rows].sum(0)


class TimesHalfLength(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * (x.shape[0] // 2) + (x > 0).long() * x.shape[0]


def test_split_by_counts_from_tolist() -> None:
    x = torch.randn(10, 3)
    for counts in ([3, 0, 5, 2], [10, 0, 0, 0], [1, 2, 3, 4]):
        got, want = eager_and_tvm(SplitByCounts(), x, torch.tensor(counts))
        assert_outputs_match(got, want, rtol=1e-6, atol=1e-6)


def test_slice_bounded_by_an_item() -> None:
    model, table = SliceToItem(), torch.randn(8, 5)
    with torch.no_grad():
        exported = torch.export.export(model, (table, torch.tensor([3, 9])))
    vm = relax.VirtualMachine(tvm.compile(from_exported_program(exported), "llvm"), tvm.cpu())
    for n in ([3, 9], [0, 1], [27, 2]):  # 3, 1 and 7 rows from one build
        got = vm["main"](tvm.runtime.tensor(table.numpy()), tvm.runtime.tensor(np.array(n)))
        got = (got if isinstance(got, tvm.runtime.Tensor) else got[0]).numpy()
        np.testing.assert_allclose(got, model(table, torch.tensor(n)).numpy(), rtol=1e-6, atol=1e-6)


def test_a_tensor_times_a_symbolic_size() -> None:
    model, n = TimesHalfLength(), torch.export.Dim("n", min=2, max=64)
    with torch.no_grad():
        exported = torch.export.export(model, (torch.randn(6, 3),), dynamic_shapes=({0: n},))
    vm = relax.VirtualMachine(tvm.compile(from_exported_program(exported), "llvm"), tvm.cpu())
    for length in (2, 7, 31):
        x = torch.randn(length, 3)
        got = vm["main"](tvm.runtime.tensor(x.numpy()))
        got = (got if isinstance(got, tvm.runtime.Tensor) else got[0]).numpy()
        want = model(x).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
