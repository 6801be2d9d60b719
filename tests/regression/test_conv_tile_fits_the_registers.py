"""Patch: a register tile leaves registers for the values a reduction step loads.

The Contraction rule's tile was any one of at most 12 accumulators (16 AVX2 registers, 4 left
for the loads). A 1x1 conv on a wide map (mobilenet_v2's and efficientnet_b0's 16 -> 96 conv on
80 x 80, their 24 -> 144 on 40 x 40) is vectorized along the map's width and took 3 channels
x 2 rows x 2 vectors, or 3 channels x 4 rows x 1 vector: each step loads 3 weights and 4
input vectors, so beside the 12 accumulators one of those sets must stay in registers and one
more streams the other: 16 or more registers, and LLVM kept the accumulators on the stack,
a load and a store of each in every step. On the fork the tile fits (6 channels x 1 row x 2
vectors, 6 channels x 2 rows x 1 vector): the same kernel ran in half the time. Stock 0.26.0
schedules no CPU kernel (serial scalar loops), so the check of the tile fails there.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import tvm

from .relaxrun import (
    AVX2,
    assembly,
    host_target,
    import_torch,
    kernels,
    lower_default,
    numpy_of,
    run_llvm,
    unrolled_rows,
)

# (name, input channels, output channels, map side, the tile's rows, its vectors)
CONVS = [
    ("16to96-80x80", 16, 96, 80, [6], 2),
    ("24to144-40x40", 24, 144, 40, [2, 6], 1),
]
IDS = [c[0] for c in CONVS]


@functools.cache
def _model(cin: int, cout: int) -> torch.nn.Module:
    """A mobilenet_v2 expansion: 1x1 conv, batch norm (folded into the kernel), ReLU6."""
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(cout)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, bias=False), bn, torch.nn.ReLU6())


def _example(cin: int, size: int) -> torch.Tensor:
    return torch.randn(1, cin, size, size, generator=torch.Generator().manual_seed(1))


def _conv(cin: int, cout: int, size: int) -> tvm.tirx.PrimFunc:
    model = _model(cin, cout).eval()
    lowered = kernels(lower_default(import_torch(model, _example(cin, size)), AVX2))
    found = [f for name, f in lowered.items() if "conv2d" in name]
    assert len(found) == 1, sorted(lowered)
    return found[0]


@pytest.mark.parametrize("name, cin, cout, size, rows, vectors", CONVS, ids=IDS)
def test_conv_tile_leaves_registers_for_a_step_s_loads(
    name: str, cin: int, cout: int, size: int, rows: list[int], vectors: int
) -> None:
    func = _conv(cin, cout, size)
    got = sorted({int(loop.extent) for loop in unrolled_rows(func.body)})
    assert got == rows, f"{name}: the tile's rows are {got}, not {rows}\n{func}"
    # the reduction's loop (the basic block of the most multiply-adds) holds its accumulators
    # in registers: it loads and stores nothing on the stack
    asm = assembly(func, AVX2)
    loop = max(asm.split(".LBB"), key=lambda block: block.count("vfmadd"))
    assert loop.count("vfmadd") >= 12, loop
    assert "(%rsp)" not in loop, f"{name}: the accumulators spill\n{loop}"


@pytest.mark.parametrize("name, cin, cout, size, rows, vectors", CONVS, ids=IDS)
@pytest.mark.parametrize("target", ["llvm", "host"])
def test_conv_matches_pytorch(
    name: str, cin: int, cout: int, size: int, rows: list[int], vectors: int, target: str
) -> None:
    model, x = _model(cin, cout).eval(), _example(cin, size)
    mod = import_torch(model, x)
    got = run_llvm(mod, numpy_of(x), target=host_target() if target == "host" else "llvm")
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
