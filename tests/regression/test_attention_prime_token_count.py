"""Patch: the CPU contraction rule pads a vector axis that no vector divides (performance
issue: ViT-B/16 and DINOv2 slower than PyTorch eager).

Attention over ViT-B/16's 197 tokens, or DINOv2's 257, multiplies the queries by the keys
into scores 197 (257) wide: a prime, so the widest vector that divides it is 1 lane and the
fork's rule tiled the scores one scalar wide, at a seventh of the speed of the other matmuls
(DINOv2's 12 score matmuls took 18% of the model's time, 107 ms of 585). The fork now pads
such a width to whole vectors (197 -> 208) through padded copies of the keys and the scores.
Stock 0.26.0 schedules no CPU kernel at all. This test checks the structure the speed comes
from (every contraction vectorized in whole AVX2 vectors, no predicate), and the numerics;
scripts/profile_model.py and the models benchmark measure the speed.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import tvm
from tvm import relax

from .relaxrun import host_target, import_torch, run_llvm
from .test_cpu_default_schedule import AVX2, _predicated, _reduction_vector_extents


class SelfAttention(torch.nn.Module):
    """Multi-head self-attention, 4 heads of 16, the scores computed as a matmul."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(64, 192)
        self.out = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, 4, 16).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2) * 0.25).softmax(-1)
        return self.out((scores @ v).transpose(1, 2).reshape(b, n, 64))


# 37 tokens: a prime, as 197 and 257 are; no divisor of it fills more than 1 lane of 8
TOKENS = 37


@functools.cache
def _imported() -> tuple[torch.nn.Module, torch.Tensor, tvm.IRModule]:
    torch.manual_seed(0)
    model, x = SelfAttention().eval(), torch.randn(1, TOKENS, 64)
    return model, x, import_torch(model, x)


def test_scores_take_whole_vectors_without_a_predicate() -> None:
    _, _, mod = _imported()
    with tvm.target.Target(AVX2):
        lowered = relax.get_pipeline("default")(mod)
    extents = _reduction_vector_extents(lowered)
    scalar = sorted(name for name, vectors in extents.items() if not vectors)
    assert extents and not scalar, f"contractions without a vector loop: {scalar} of {extents}"
    assert all(n % 8 == 0 for vectors in extents.values() for n in vectors), extents
    predicated = _predicated(lowered, extents)
    assert not predicated, f"tiles under a predicate: {predicated}"


def test_results_match_pytorch() -> None:
    model, x, mod = _imported()
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=1e-4, atol=1e-5)


def test_host_target_results_match_pytorch() -> None:
    """For the host's own ISA (16 lanes with AVX-512: 37 is padded to 48)."""
    model, x, mod = _imported()
    got = run_llvm(mod, x.numpy(), target=host_target())
    with torch.no_grad():
        np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-4, atol=1e-5)
