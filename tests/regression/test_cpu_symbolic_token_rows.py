"""Patch: a dense layer over a symbolic token count (an LLM's prefill, exported with a dynamic
sequence length) tiles rows of tokens, as a static length does.

The fork's CPU rule scheduled such a kernel as if for one token: no rows of tokens in the
register tile and the weight read in its own layout, so each token streamed the whole weight
again. A 576 x 1536 layer (SmolLM-135M's MLP) over 128 tokens ran 5x slower than its static
build, and a Llama prefill at 3x PyTorch eager's time. On the fork the kernel has two bodies: at
least a tile's rows of tokens run row tiles over the tokens padded to whole tiles, fewer (a
decode step) the one-token schedule; both read one blocked copy of the weight, made at build
time. Stock 0.26.0 schedules nothing (serial scalar loops), so every check here fails there.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import tvm
from tvm import tirx

from .relaxrun import (
    host_target,
    import_torch,
    kernels,
    lower_default,
    nodes,
    run_llvm,
    unrolled_rows,
)


class MLP(torch.nn.Module):
    """A gated MLP as Llama's (64 wide, 192 inner), no biases."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(64, 192, bias=False)
        self.up = torch.nn.Linear(64, 192, bias=False)
        self.down = torch.nn.Linear(192, 64, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


@functools.cache
def _module() -> tuple[torch.nn.Module, tvm.IRModule]:
    torch.manual_seed(0)
    model = MLP().eval()
    tokens = torch.export.Dim("tokens", min=1, max=512)
    return model, import_torch(model, torch.randn(1, 16, 64), ({1: tokens},))


def _symbolic(func: tirx.PrimFunc) -> bool:
    return any(not isinstance(d, tirx.IntImm) for p in func.params for d in p.shape)


def _dense_kernels() -> dict[str, tirx.PrimFunc]:
    """The lowered kernels of the dense layers (fused with their elementwise consumers)."""
    _, mod = _module()
    lowered = lower_default(mod, "llvm")
    found = {n: f for n, f in kernels(lowered).items() if "matmul" in n and _symbolic(f)}
    assert len(found) >= 2, sorted(kernels(lowered))
    return found


def test_dense_layers_tile_rows_of_tokens() -> None:
    for name, func in _dense_kernels().items():
        branches = nodes(func, tirx.IfThenElse)
        assert branches, f"{name}: no body for a tile's rows of tokens\n{func}"
        rows = unrolled_rows(branches[0].then_case)
        assert rows, f"{name}: the token rows are not unrolled in the tile\n{func}"


def test_both_bodies_read_one_weight_blocked_at_build_time() -> None:
    # the kernel takes the weight as a blocked copy (N / width, K, width), computed once when
    # the module is built: no copy of it runs on a call
    for name, func in _dense_kernels().items():
        blocked = [p for p in func.params if len(p.shape) == 3]
        assert blocked, f"{name}: the weight is read in its own layout\n{func}"


@pytest.mark.parametrize("length", [1, 3, 4, 7, 16, 97])
@pytest.mark.parametrize("target", ["llvm", "host"])
def test_results_match_pytorch_at_every_length(length: int, target: str) -> None:
    model, mod = _module()
    x = torch.randn(1, length, 64)
    got = run_llvm(mod, x.numpy(), target=host_target() if target == "host" else "llvm")
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
