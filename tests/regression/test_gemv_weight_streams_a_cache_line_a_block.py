"""Patch: a batch-1 dense layer's weight is blocked a cache line wide, so that the kernel reads
it as several streams through memory at once.

dlight's CPU Contraction rule (fork patches) blocks a matrix-vector product's constant weight
at build time by the register tile's width, 8 vectors (64 float32 columns with AVX2, 128 with
AVX-512): each step of the reduction then reads 256 or 512 contiguous bytes, and the whole
weight is one sequential stream, which one core's prefetchers fetch at about 2/3 of the rate
they reach with four streams in flight (alexnet's 9216 x 4096 classifier layer at 11.5 GB/s,
PyTorch's at 14.5, 1 thread, 2-core AMD EPYC). On the fork the weight is blocked 16 columns
(one 64-byte cache line of float32) wide, and the tile reads its columns from 4 or 8 blocks at
once. Stock, which schedules nothing, passes the weight in its own layout to the kernel; the
fork before this patch passes it blocked by the tile's width. Here the kernel gets it blocked
by 16, on the generic x86-64 target and on the host, and the result matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import host_target, import_torch, kernel_calls, run_llvm

K, N = 1024, 512


@pytest.mark.parametrize("target", ["llvm", "host"])
def test_a_batch_one_dense_layer_reads_its_weight_a_cache_line_a_block(target: str) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(K, N), torch.nn.ReLU()).eval()
    x = torch.randn(1, K)
    with torch.no_grad():
        want = model(x).numpy()
    seen, record = kernel_calls()
    got = run_llvm(
        import_torch(model, x),
        x.numpy(),
        target=host_target() if target == "host" else "llvm",
        instrument=record,
    )
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    matmuls = [s for n, s in seen if "matmul" in n]
    assert matmuls, seen
    weights = [dims for s in matmuls for dims in s if int(np.prod(dims)) == K * N]
    assert weights, f"no kernel reads the weight: {seen}"
    assert all(dims == (N // 16, K, 16) for dims in weights), (
        f"the weight reaches the kernel as {weights}, not in blocks of a cache line (16 columns)"
    )
