"""Patch: a grouped conv is vectorized along a group's output channels.

RegNet's grouped 3x3 convs (group width 16) read their input at channel `ff // 16 * 16 + rc`:
the same element for the 16 output channels of a vector within a group. DLight's CPU
contraction rule found no linear form of that index and counted it as a gather, so it turned
the output channels down as the vector axis and vectorized along the output's columns, whose
input a stride of 2 reads lane by lane: RegNetX-400MF's 32-channel stride-2 grouped conv on
80 x 80 took 2.6x the time of the ungrouped conv of twice its multiply-adds. On the fork the
grouped conv's tile is vectorized along a group's output channels (the model 8.06 -> 6.72
ms on an AVX-512 CPU, 1 thread). Stock 0.26.0 schedules no CPU kernel (serial scalar
loops), so the check of the schedule fails there too.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm import tirx

from .relaxrun import host_target, import_torch, kernels, lower_default, nodes, numpy_of, run_llvm


def _block(channels: int, stride: int) -> torch.nn.Module:
    """RegNet's grouped conv, its batch norm and ReLU (group width 16)."""
    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.Conv2d(channels, channels, 3, stride, 1, groups=channels // 16, bias=False),
        torch.nn.BatchNorm2d(channels),
        torch.nn.ReLU(),
    )
    block[1].running_mean.normal_()
    block[1].running_var.uniform_(0.5, 2.0)
    return block.eval()


CASES = {  # RegNetX-400MF's first stage's stride-2 conv, its third stage's stride-1 conv
    "32-channels-stride-2": (_block(32, 2), (1, 32, 80, 80)),
    "160-channels-stride-1": (_block(160, 1), (1, 160, 10, 10)),
}


def _vector_var_indexes_the_output_channel(func: tirx.PrimFunc) -> bool:
    """Whether the conv's update block has a vectorized loop whose variable its output
    channel iterator is bound to."""
    vectorized = {
        loop.loop_var.name for loop in nodes(func, tirx.For) if loop.kind == tirx.ForKind.VECTORIZED
    }
    for realize in nodes(func, tirx.SBlockRealize):
        block = realize.block
        if "conv2d" not in block.name_hint or not block.name_hint.endswith("_update"):
            continue
        for iter_var, value in zip(block.iter_vars, realize.iter_values, strict=True):
            if iter_var.var.name == "v_ff":
                return any(v.name in vectorized for v in nodes(value, tirx.Var))
    return False


@pytest.mark.parametrize("name", sorted(CASES))
def test_grouped_conv_is_vectorized_along_its_output_channels(name: str) -> None:
    model, shape = CASES[name]
    lowered = kernels(lower_default(import_torch(model, torch.randn(shape)), host_target()))
    convs = {n: f for n, f in lowered.items() if "conv2d" in n}
    assert convs, sorted(lowered)
    for n, func in convs.items():
        assert _vector_var_indexes_the_output_channel(func), f"{n}\n{func}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_grouped_conv_matches_pytorch(name: str) -> None:
    model, shape = CASES[name]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    got = run_llvm(import_torch(model, x), numpy_of(x), target=host_target())
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
