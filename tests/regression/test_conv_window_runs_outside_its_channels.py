"""Patch: a conv's window runs outside its channels where it outgrows the registers.

R(2+1)D-18's (1, 3, 3) convs (64 -> 144 channels on 8 frames of 56 x 56, half the model's
time) are vectorized along 144 output channels, 9 AVX-512 vectors, with a tile of 4 x 7
points of one vector. DLight's CPU contraction rule ran TE's reduction order, channels
outermost and the window's columns innermost: LLVM unrolls that 3-step loop and holds the
4 x 9 input values its steps share beside the 28 accumulators, and spills both to the stack
(a store or load of the stack on most multiply-adds). On the fork the window's axes run
outside and the channels innermost, where each broadcast folds into its multiply-add: no
stack access in the reduction's loop. Stock 0.26.0 schedules no CPU kernel (serial scalar
loops), so the check of the schedule fails there too.
"""

from __future__ import annotations

import numpy as np
import torch
from tvm import tirx

from .relaxrun import (
    AVX512,
    assembly,
    host_target,
    import_torch,
    kernels,
    lower_default,
    nodes,
    numpy_of,
    run_llvm,
)


def _block() -> torch.nn.Module:
    """R(2+1)D's spatial conv, its batch norm and ReLU."""
    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.Conv3d(64, 144, (1, 3, 3), 1, (0, 1, 1), bias=False),
        torch.nn.BatchNorm3d(144),
        torch.nn.ReLU(),
    )
    block[1].running_mean.normal_()
    block[1].running_var.uniform_(0.5, 2.0)
    return block.eval()


def _conv(shape: tuple[int, ...], target: dict | object) -> tirx.PrimFunc:
    lowered = kernels(lower_default(import_torch(_block(), torch.randn(shape)), target))
    convs = [f for n, f in lowered.items() if "conv3d" in n]
    assert len(convs) == 1, sorted(lowered)
    return convs[0]


def _reduction_loops(func: tirx.PrimFunc) -> list[str]:
    """The loops of the conv's update block's reduction iterators, outermost first."""
    for realize in nodes(func, tirx.SBlockRealize):
        block = realize.block
        if block.name_hint.startswith("conv3d") and block.name_hint.endswith("_update"):
            axes = {
                v.name
                for iv, value in zip(block.iter_vars, realize.iter_values, strict=True)
                if iv.iter_type == tirx.IterVar.CommReduce
                for v in nodes(value, tirx.Var)
            }
            loops = [loop.loop_var.name for loop in nodes(func, tirx.For)]
            # nodes visits in post order: innermost loops first
            return [name for name in reversed(loops) if name in axes]
    raise AssertionError(f"no conv3d update block in\n{func}")


def test_window_runs_outside_the_channels_with_avx512() -> None:
    func = _conv((1, 64, 8, 56, 56), AVX512)
    assert _reduction_loops(func)[-1] == "rc", func
    asm = assembly(func, AVX512)
    loop = max(asm.split(".LBB"), key=lambda block: block.count("vfmadd"))
    assert loop.count("vfmadd") >= 28 and "(%rsp)" not in loop, loop


def test_conv_matches_pytorch() -> None:
    x = torch.randn((1, 64, 2, 28, 28), generator=torch.Generator().manual_seed(1))
    model = _block()
    got = run_llvm(import_torch(model, x), numpy_of(x), target=host_target())
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
