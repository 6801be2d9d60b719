"""Patch: a slice whose end is a symbol torch.export bounds keeps its length (BUGS: BERT with a
dynamic sequence length stopped in `tvm.compile` with "CodeGenVM cannot handle this intrinsic
now: relax.add").

BERT adds `position_embeddings(position_ids[:, :seq])` to its token embeddings. With the
sequence length exported as `Dim("seq", max=128)`, stock 0.26.0 imports the slice clamped,
`min(seq, 128)` long, so the sum of a `seq`-long and a `min(seq, 128)`-long tensor has no
known shape, LegalizeOps leaves the add alone and the VM codegen rejects it. torch.export
guarantees seq <= 128 (its range constraints, which the importer already records): on the
fork the slice is `seq` long, and the module compiles once and matches PyTorch at every
length.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program


class Positions(torch.nn.Module):
    """Token vectors plus the first `seq` rows of a learned position table."""

    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(128, 8))
        self.register_buffer("ids", torch.arange(128)[None], persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = self.ids[:, : x.shape[1]]
        return x + self.table[positions]


@functools.cache
def compiled() -> tuple[Positions, relax.VirtualMachine]:
    """The model, and its module compiled once (in the first test that asks: a compile error
    is that test's failure)."""
    torch.manual_seed(0)
    seq = torch.export.Dim("seq", min=1, max=128)
    model = Positions().eval()
    with torch.no_grad():
        exported = torch.export.export(model, (torch.randn(1, 16, 8),), dynamic_shapes=({1: seq},))
    mod = from_exported_program(exported, keep_params_as_input=False)
    return model, relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())


@pytest.mark.parametrize("length", [1, 16, 77, 128])
def test_dynamic_length_matches(length: int) -> None:
    model, vm = compiled()
    x = torch.randn(1, length, 8)
    out = vm["main"](tvm.runtime.tensor(x.numpy()))
    got = (out if isinstance(out, tvm.runtime.Tensor) else out[0]).numpy()
    with torch.no_grad():
        np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-6)
