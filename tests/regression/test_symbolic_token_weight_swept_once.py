"""Patch: over a symbolic token count (an LLM's prefill), a dense layer's tiles of tokens run
inside each block of its weight, so that the weight is read from memory once per call.

The fork tiles rows of tokens over a symbolic sequence length, but ordered the tiles as if the
token count were unbounded: the activations counted as the largest input, so their tiles were
the outer ones, and every tile of 6 tokens streamed the whole weight from memory again.
Qwen2.5-0.5B's 544 MB lm_head read 22 times over a 128-token prompt ran at half PyTorch's
matmul rate. On the fork the token count counts as the tile counts it (840 tokens), so a weight
larger than that many tokens' activations is swept once: consecutive iterations of the
kernel's parallel loop compute the same block of the output's features. Stock 0.26.0 schedules
nothing (serial scalar loops, no parallel loop), so the order check fails there.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import tvm
from tvm import tirx

from .relaxrun import host_target, import_torch, kernels, lower_default, nodes, run_llvm

WIDTH, FEATURES = 64, 2048  # the weight: 2048 x 64, larger than 840 tokens' activations


@functools.cache
def _module() -> tuple[torch.nn.Module, tvm.IRModule]:
    torch.manual_seed(0)
    model = torch.nn.Linear(WIDTH, FEATURES, bias=False).eval()
    tokens = torch.export.Dim("tokens", min=1, max=4096)
    return model, import_torch(model, torch.randn(1, 16, WIDTH), ({1: tokens},))


@functools.cache
def _dense_kernel() -> tirx.PrimFunc:
    _, mod = _module()
    lowered = kernels(lower_default(mod, "llvm"))
    found = [f for name, f in lowered.items() if "matmul" in name]
    assert len(found) == 1, sorted(lowered)
    return found[0]


def _features_of_iterations(func: tirx.PrimFunc, tokens: int) -> list[int]:
    """The first output feature the dense block computes in the first two iterations of the
    parallel loop of the kernel's body for a tile's rows of tokens, at `tokens` tokens."""
    branches = nodes(func, tirx.IfThenElse)
    assert branches, f"no body for a tile's rows of tokens\n{func}"
    loops = nodes(branches[0].then_case, tirx.For)
    parallel = [loop for loop in loops if loop.kind == tirx.ForKind.PARALLEL]
    assert parallel, f"no parallel loop over the dense layer's tiles\n{func}"
    updates = [
        realize
        for realize in nodes(parallel[-1], tirx.SBlockRealize)
        if realize.block.init is None and len(realize.iter_values) == 3
    ]
    assert updates, f"no dense block in the parallel loop\n{func}"
    symbols = {var for p in func.params for d in p.shape for var in nodes(d, tirx.Var)}
    features = []
    for iteration in (0, 1):
        values = {loop.loop_var: tirx.IntImm(loop.min.ty.dtype, 0) for loop in loops}
        values[parallel[-1].loop_var] = tirx.IntImm(parallel[-1].min.ty.dtype, iteration)
        values.update({var: tirx.IntImm("int64", tokens) for var in symbols})
        binding = tirx.stmt_functor.substitute(updates[-1].iter_values[1], values)
        features.append(int(tvm.arith.Analyzer().simplify(binding)))
    return features


@pytest.mark.parametrize("tokens", [16, 128, 512])
def test_consecutive_tiles_of_tokens_read_one_weight_block(tokens: int) -> None:
    first, second = _features_of_iterations(_dense_kernel(), tokens)
    assert first == second, (
        f"at {tokens} tokens the parallel loop's iterations 0 and 1 compute output features "
        f"{first} and {second}: the tiles of tokens are outside the weight's blocks, so each "
        "streams the whole weight"
    )


@pytest.mark.parametrize("length", [1, 5, 6, 97, 128])
@pytest.mark.parametrize("target", ["llvm", "host"])
def test_results_match_pytorch_at_every_length(length: int, target: str) -> None:
    model, mod = _module()
    x = torch.randn(1, length, WIDTH)
    got = run_llvm(mod, x.numpy(), target=host_target() if target == "host" else "llvm")
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
