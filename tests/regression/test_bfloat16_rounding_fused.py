"""Patch: on CPU, a bfloat16 linear layer and the rounding of its float32 result to bfloat16 are
one kernel, as is a float32 chain (a norm, an activation) and its rounding; the results are
PyTorch's.

The PyTorch importer emits a bfloat16 linear layer as a matmul of bfloat16 inputs accumulated in
float32, then a cast to bfloat16, and computes a norm or an activation in float32 between two
casts. The fork's fusion left every kernel over bfloat16 out of its groups, so each cast was a
kernel of its own: a pass over memory, an allocation and a call each (a small bfloat16 Llama:
133 kernel calls against 111 with the patch; 49 in float32). A kernel that reads a bfloat16
value still joins no group: inside one kernel TIR's bfloat16 legalization computes in float32
and drops a rounding between two operations (float32(bfloat16(x)) becomes x), so a fused cast
and widening would give other numbers than PyTorch's. Stock 0.26.0 fuses nothing on CPU, so the
structural check fails there.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
import torch
import tvm

from .relaxrun import host_target, import_torch, kernels, lower_default, numpy_of, run_llvm


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
def _module() -> tuple[torch.nn.Module, tvm.IRModule]:
    torch.manual_seed(0)
    model = Block().to(torch.bfloat16).eval()
    return model, import_torch(model, torch.randn(1, 16, 64, dtype=torch.bfloat16))


def _dtypes(func) -> list[str]:
    return [str(p.dtype) for p in func.params]


def test_no_kernel_only_rounds_float32_to_bfloat16() -> None:
    _, mod = _module()
    found = kernels(lower_default(mod, "llvm"))
    # a kernel that reads float32 and writes bfloat16 and does nothing else: a cast left alone
    rounding = [n for n, f in found.items() if _dtypes(f) == ["float32", "bfloat16"]]
    rounding = [n for n in rounding if re.fullmatch(r"cast\d*", n)]
    assert not rounding, f"roundings to bfloat16 left as kernels: {rounding} of {sorted(found)}"
    dense = [n for n, f in found.items() if "matmul" in n]
    assert dense and all("cast" in n and _dtypes(found[n])[-1] == "bfloat16" for n in dense), dense


@pytest.mark.parametrize("target", ["llvm", "host"])
def test_block_matches_pytorch(target: str) -> None:
    model, mod = _module()
    x = torch.randn(1, 16, 64, dtype=torch.bfloat16)
    got = run_llvm(mod, numpy_of(x), target=host_target() if target == "host" else "llvm")
    with torch.no_grad():
        want = model(x).float().numpy()
    assert str(got.dtype) == "bfloat16"
    # bfloat16's precision: a rounding is 2**-8 of a value
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got.astype("float32"), want, rtol=2**-7, atol=2**-8 * scale)
