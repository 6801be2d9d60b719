"""Patch: the CPU schedule rules schedule kernels with symbolic extents (a sequence length
exported with `torch.export.Dim`), not only static ones.

A transformer block exported with a dynamic sequence length lowers to dense layers, attention
batch matmuls and elementwise ops whose row extent is the symbol. Stock 0.26.0 leaves every
kernel of `tvm.compile(..., "llvm")` as serial scalar loops; the fork's rules scheduled only
static extents, so the same model compiled with a dynamic length ran its dense layers as
serial scalar loops (Llama's block: 4.6 ms against 0.69 ms static, 16 tokens). On the fork the
dense layers are tiled, parallel and vectorized along their static features, the attention
matmuls run their rows in parallel, elementwise ops with a static innermost extent are
vectorized, and the results match PyTorch at every length.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import tvm
from tvm import relax, tirx

from .relaxrun import import_torch, run_llvm
from .test_cpu_default_schedule import _contractions


class Block(torch.nn.Module):
    """A pre-norm attention block with a GELU MLP (64 wide, 4 heads)."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(64)
        self.qkv = torch.nn.Linear(64, 192)
        self.out = torch.nn.Linear(64, 64)
        self.up = torch.nn.Linear(64, 128)
        self.down = torch.nn.Linear(128, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, n, 3, 4, 16).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2) * 0.25).softmax(-1)
        x = x + self.out((scores @ v).transpose(1, 2).reshape(b, n, 64))
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


@functools.cache
def _module() -> tuple[torch.nn.Module, tvm.IRModule]:
    torch.manual_seed(0)
    model = Block().eval()
    seq = torch.export.Dim("seq", min=1, max=256)
    return model, import_torch(model, torch.randn(1, 16, 64), ({1: seq},))


def test_dense_layers_are_parallel_and_vectorized() -> None:
    _, mod = _module()
    with tvm.target.Target("llvm"):
        lowered = relax.get_pipeline("default")(mod)
    funcs = _contractions(lowered)
    dense = {name: kinds for name, kinds in funcs.items() if "matmul" in name}  # fused too
    assert dense, sorted(funcs)
    vectorized = [f for f, kinds in dense.items() if tirx.ForKind.VECTORIZED in kinds]
    parallel = [f for f, kinds in funcs.items() if tirx.ForKind.PARALLEL in kinds]
    assert len(vectorized) >= 4, f"dense layers left scalar: {sorted(dense)}"
    assert set(funcs) == set(parallel), f"serial contractions: {sorted(set(funcs) - set(parallel))}"


@pytest.mark.parametrize("length", [1, 16, 97])
def test_results_match_pytorch(length: int) -> None:
    model, mod = _module()
    x = torch.randn(1, length, 64)
    got = run_llvm(mod, x.numpy())
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
