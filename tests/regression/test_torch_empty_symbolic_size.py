"""Patch: `torch.empty` of a symbolic size imports (BUGS: Mixtral and Qwen2-MoE exported with a
dynamic sequence length stopped at import with "Mismatched type on argument #0 when calling:
`relax.ShapeExpr(...)`").

transformers' MoE layers allocate their per-token output with `torch.empty` of the token
count; with a dynamic sequence length that count is a symbol, an fx node in the call's
arguments. Stock 0.26.0 passed the raw arguments to `relax.op.zeros`, which cannot make a shape
of them; the fork reads them as every other converter does and the module matches PyTorch at
every length.
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


@pytest.mark.parametrize("rows", [1, 5, 33])
def test_symbolic_empty_matches(rows: int) -> None:
    n = torch.export.Dim("n", min=1, max=64)
    with torch.no_grad():
        exported = torch.export.export(Scratch(), (torch.randn(5, 3),), dynamic_shapes=({0: n},))
    mod = from_exported_program(exported)
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    x = torch.randn(rows, 3)
    out = vm["main"](tvm.runtime.tensor(x.numpy()))
    got = (out if isinstance(out, tvm.runtime.Tensor) else out[0]).numpy()
    np.testing.assert_allclose(got, Scratch()(x).numpy(), rtol=1e-6)
