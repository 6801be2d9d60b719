"""Patch: the CPU rules vectorize bfloat16 kernels, so a bfloat16 model runs as fast as its
float32 build and reads half the bytes of weight.

TVM emulates bfloat16 on CPUs, and the fork's CPU rules left every block that touches a
bfloat16 buffer scalar, as for float8, whose legalization rewrites scalar code only. But
bfloat16's (BF16ComputeLegalize) runs before VectorizeLoop and leaves float32 arithmetic and
16-bit shifts, which vectorize. A bfloat16 Llama of 4 layers, 256 wide, took 1.5 s for a
128-token prefill against 28 ms in float32, and 6x float32's time per decoded token. On the
fork a bfloat16 dense layer (bfloat16 inputs accumulated in float32, as the PyTorch importer
emits it) gets float32's register tile and blocked weight, and the elementwise kernels around
it their vectors. Stock 0.26.0 schedules no CPU kernel (serial scalar loops), so the
structural check fails there.
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
    numpy_of,
    run_llvm,
    vector_extents,
)


class Block(torch.nn.Module):
    """A Llama-style MLP block: RMS norm, gated MLP (64 wide, 192 inner), residual."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.RMSNorm(64, eps=1e-6)
        self.gate = torch.nn.Linear(64, 192, bias=False)
        self.up = torch.nn.Linear(64, 192, bias=False)
        self.down = torch.nn.Linear(192, 64, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


@functools.cache
def bfloat16_block(dynamic: bool) -> tuple[torch.nn.Module, tvm.IRModule]:
    torch.manual_seed(0)
    model = Block().to(torch.bfloat16).eval()
    shapes = ({1: torch.export.Dim("tokens", min=1, max=512)},) if dynamic else None
    example = torch.randn(1, 16, 64, dtype=torch.bfloat16)
    return model, import_torch(model, example, shapes)


def _reads_bfloat16(func: tirx.PrimFunc) -> bool:
    return any(str(getattr(p, "dtype", "")) == "bfloat16" for p in func.params)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic-length"])
def test_bfloat16_kernels_are_vectorized(dynamic: bool) -> None:
    _, mod = bfloat16_block(dynamic)
    found = {n: f for n, f in kernels(lower_default(mod, "llvm")).items() if _reads_bfloat16(f)}
    dense = [n for n in found if "matmul" in n]
    assert len(dense) >= 2, sorted(found)
    scalar = [n for n, f in found.items() if not vector_extents(f)]
    assert not scalar, f"bfloat16 kernels left scalar: {scalar}"


# (dynamic, tokens): the static build takes its example's 16 tokens
CALLS = [(False, 16), (True, 1), (True, 16), (True, 37)]


@pytest.mark.parametrize(
    "dynamic, length", CALLS, ids=["static-16", "dynamic-1", "dynamic-16", "dynamic-37"]
)
@pytest.mark.parametrize("target", ["llvm", "host"])
def test_bfloat16_block_matches_pytorch(dynamic: bool, length: int, target: str) -> None:
    model, mod = bfloat16_block(dynamic)
    x = torch.randn(1, length, 64, dtype=torch.bfloat16)
    got = run_llvm(mod, numpy_of(x), target=host_target() if target == "host" else "llvm")
    with torch.no_grad():
        want = model(x).float().numpy()
    assert str(got.dtype) == "bfloat16"
    # bfloat16's precision (2**-8 a rounding; the fork gives PyTorch's numbers bit for bit here)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got.astype("float32"), want, rtol=2**-7, atol=2**-8 * scale)
