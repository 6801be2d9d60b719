"""Patch: the CPU contraction rule vectorizes a reduction along rows one vector wide across
them (performance issue: SegFormer-B0 compiled in 6x stock's time).

Softmax's max and sum and layer norm's mean and variance reduce along each row, whose
elements are contiguous; the fork's rule vectorized them across the rows, as it does a
matrix-vector product, up to 8 vectors (128 AVX-512 lanes). Each lane of such a vector is
a row apart, so it is loaded on its own: 128-lane gathers made LLVM take 4-25 s per kernel
(SegFormer-B0's softmax and layer-norm kernels took 56 of the 72 s its kernels took) and ran
no faster than one vector. The fork now gives such a reduction one vector. Stock 0.26.0
vectorizes none of these kernels. This test checks the structure (every row reduction
vectorized, one AVX2 vector wide) and the numerics; compile times are measured by the models
benchmark, not here.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import tvm

from .relaxrun import import_torch, kernels, lower_default, run_llvm, vector_extents
from .test_cpu_default_schedule import AVX2


class EfficientAttention(torch.nn.Module):
    """SegFormer's stage-1 block in miniature: layer norms over 1024 tokens of 32 features,
    attention from them to 64 reduced keys."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(32)
        self.q = torch.nn.Linear(32, 32)
        self.kv = torch.nn.Linear(32, 64)
        self.reduce = torch.nn.Conv2d(32, 32, 4, stride=4)
        self.reduced_norm = torch.nn.LayerNorm(32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        grid = h.transpose(1, 2).reshape(1, 32, 32, 32)
        reduced = self.reduced_norm(self.reduce(grid).flatten(2).transpose(1, 2))
        k, v = self.kv(reduced).chunk(2, dim=-1)
        scores = (self.q(h) @ k.transpose(1, 2) / 32**0.5).softmax(-1)
        return x + scores @ v


@functools.cache
def _imported() -> tuple[torch.nn.Module, torch.Tensor, tvm.IRModule]:
    torch.manual_seed(0)
    model, x = EfficientAttention().eval(), torch.randn(1, 1024, 32)
    return model, x, import_torch(model, x)


def test_row_reductions_take_one_vector() -> None:
    _, _, mod = _imported()
    extents = {
        name: vector_extents(func)
        for name, func in kernels(lower_default(mod, AVX2)).items()
        if name.startswith(("layer_norm", "softmax", "safe_softmax"))
    }
    assert len(extents) >= 2, sorted(extents)
    assert all(extents.values()), f"row reductions left scalar: {extents}"
    wide = {name: e for name, e in extents.items() if max(e) > 8}
    assert not wide, f"vectors wider than one AVX2 vector across rows: {wide}"


def test_results_match_pytorch() -> None:
    model, x, mod = _imported()
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=1e-4, atol=1e-5)
