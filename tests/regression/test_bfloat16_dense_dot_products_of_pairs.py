"""Patch: bfloat16 dense layers take dot products of pairs with AVX512-BF16.

A bfloat16 linear layer accumulates float32(x) * float32(w) in float32. DLight's CPU
contraction rule tiled it as float32: each weight vector widened from bfloat16 in registers
before its FMA, at about float32's rate, where PyTorch's bf16 matmul (vdpbf16ps) runs faster.
On the fork, with AVX512-BF16, the weight's blocked copy is laid out in pairs of the
reduction and each vector of the tile is one vdpbf16ps (16 pairs of products a
instruction), at a fixed token count and over a symbolic one (a prefill and a decode step
in one kernel). Stock 0.26.0 schedules no CPU kernel (serial scalar loops), so the check of
the assembly fails there too.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import tvm
import tvm_ffi
from tvm import relax

from .relaxrun import assembly, host_target, import_torch, kernels, lower_default, numpy_of

# Cooper Lake: AVX-512 with AVX512-BF16 (the Zen 4's and Sapphire Rapids' bfloat16 dot product)
AVX512_BF16 = {"kind": "llvm", "mtriple": "x86_64-linux-gnu", "mcpu": "cooperlake"}


def _layer() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(256, 512).to(torch.bfloat16).eval()


def _tokens() -> tuple:
    return ({0: torch.export.Dim("tokens", min=1, max=4096)},)


def _matmul_asm(target: dict, dynamic: bool) -> str:
    x = torch.randn(64, 256).to(torch.bfloat16)
    mod = import_torch(_layer(), x, dynamic_shapes=_tokens() if dynamic else None)
    lowered = kernels(lower_default(mod, target))
    matmuls = [f for n, f in lowered.items() if "matmul" in n]
    assert len(matmuls) == 1, sorted(lowered)
    return assembly(matmuls[0], target)


@pytest.mark.parametrize("dynamic", [False, True], ids=["64-tokens", "symbolic-tokens"])
def test_bfloat16_dense_takes_vdpbf16ps(dynamic: bool) -> None:
    asm = _matmul_asm(AVX512_BF16, dynamic)
    loop = max(asm.split(".LBB"), key=lambda block: block.count("vdpbf16ps"))
    # a tile of 8 rows of two vectors: 16 per pair of the reduction, nothing widened
    assert loop.count("vdpbf16ps") >= 16 and "vpslld" not in loop, loop


def _host_has_avx512_bf16() -> bool:
    features = tvm_ffi.get_global_func("tvm.codegen.llvm.GetHostCPUFeatures")()
    return bool(features.get("avx512bf16", False))


@functools.cache
def _host_vm() -> object:
    """The layer over a symbolic token count, compiled for this machine (once: in the tests,
    so that a failure to build fails them)."""
    x = torch.randn(64, 256).to(torch.bfloat16)
    mod = import_torch(_layer(), x, dynamic_shapes=_tokens())
    return relax.VirtualMachine(tvm.compile(mod, target=host_target()), tvm.cpu())


@pytest.mark.skipif(not _host_has_avx512_bf16(), reason="the host has no AVX512-BF16")
@pytest.mark.parametrize("tokens", [1, 13, 64])
def test_bfloat16_dense_matches_pytorch(tokens: int) -> None:
    layer, vm = _layer(), _host_vm()
    x = torch.randn(tokens, 256, generator=torch.Generator().manual_seed(tokens))
    x = x.to(torch.bfloat16)
    out = vm["main"](tvm.runtime.tensor(numpy_of(x)))
    got = (out if isinstance(out, tvm.runtime.Tensor) else out[0]).numpy().astype("float32")
    with torch.no_grad():
        want = layer(x).float().numpy()
    # bfloat16's precision: PyTorch rounds the same float32 sums to bfloat16
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
