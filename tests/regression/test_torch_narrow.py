"""Patch: `x.narrow(dim, start, length)` takes `length` elements from `start`.

Both importers sliced `[start, length)` instead of `[start, start + length)`: a silent wrong
result (a wrong shape, and the wrong elements) for any start but 0, on the FX route
(`from_fx`) and on an exported program imported without decompositions
(`run_ep_decomposition=False`, where `aten.narrow` stays). Upstream's tests narrow from 0 only.
A negative start counts from the end, as in PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program, from_fx


class Narrow(torch.nn.Module):
    def __init__(self, start: int) -> None:
        super().__init__()
        self.start = start

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.narrow(1, self.start, 2)


def _run(mod: tvm.IRModule, x: torch.Tensor) -> np.ndarray:
    out = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())["main"](
        tvm.runtime.tensor(x.numpy())
    )
    return (out if hasattr(out, "numpy") else out[0]).numpy()


@pytest.mark.parametrize("start", [1, -3])
def test_fx_route(start: int) -> None:
    x = torch.randn(3, 5, 4)
    mod = from_fx(torch.fx.symbolic_trace(Narrow(start)), [((3, 5, 4), "float32")])
    np.testing.assert_array_equal(_run(mod, x), Narrow(start)(x).numpy())


@pytest.mark.parametrize("start", [1, -3])
def test_exported_program_without_decompositions(start: int) -> None:
    x = torch.randn(3, 5, 4)
    exported = torch.export.export(Narrow(start), (x,))
    mod = from_exported_program(exported, run_ep_decomposition=False)
    np.testing.assert_array_equal(_run(mod, x), Narrow(start)(x).numpy())
