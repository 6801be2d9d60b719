"""Patch: a reduction that runs no iterations writes its identity, not stale memory.

Lowered in place, a reduction block's init runs in the first iteration of its reduction
loops. When the extent is a size known at run time only and is 0 there (the elements a mask
selected, none this time), the init never runs: stock's output is whatever the memory held.
`torch.masked_select(x, x > t).mean()` with nothing above `t` gives inf where PyTorch gives
NaN, and a sum over no rows gives the previous call's values. On the fork the init of such a
reduction comes before its loops: sum 0, prod 1, mean NaN, max/min the dtype's extremes.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax

from .relaxrun import Lambda, eager_and_tvm

SELECTIONS = {
    "masked_mean": lambda x: torch.masked_select(x, x > 5).mean(),
    "masked_sum": lambda x: torch.masked_select(x, x > 5).sum(),
    "masked_prod": lambda x: torch.masked_select(x, x > 5).prod(),
}


@pytest.mark.parametrize("name", list(SELECTIONS))
def test_a_reduction_of_an_empty_selection_matches_pytorch(name: str) -> None:
    x = torch.rand(4, 8)  # nothing above 5: every selection is empty
    for _ in range(3):  # the memory of an earlier call is what stock's output holds
        got, want = eager_and_tvm(Lambda(SELECTIONS[name]), x)
        np.testing.assert_array_equal(got[0], want[0])


def test_reductions_over_no_rows_are_their_identities() -> None:
    bb = relax.BlockBuilder()
    n = tvm.tirx.Var("n", "int64")
    x = relax.Var("x", relax.TensorType([n, 8], "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            outs = [
                bb.emit(relax.op.sum(x, axis=[0])),
                bb.emit(relax.op.prod(x, axis=[0])),
                bb.emit(relax.op.max(x, axis=[0])),
            ]
            out = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(tvm.compile(bb.get(), target="llvm"), tvm.cpu())
    lowest = np.finfo("float32").min
    for rows in (3, 0, 5, 0, 0):
        data = np.random.rand(rows, 8).astype("float32") + 1
        total, product, largest = (t.numpy() for t in vm["main"](tvm.runtime.tensor(data)))
        if rows:
            np.testing.assert_allclose(total, data.sum(0), rtol=1e-6)
            np.testing.assert_allclose(product, data.prod(0), rtol=1e-5)
            np.testing.assert_array_equal(largest, data.max(0))
        else:
            np.testing.assert_array_equal(total, np.zeros(8, "float32"))
            np.testing.assert_array_equal(product, np.ones(8, "float32"))
            np.testing.assert_array_equal(largest, np.full(8, lowest, "float32"))
