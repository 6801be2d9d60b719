"""Patch: a batch-1 dense layer's constant weight is blocked at build time, as a larger one's.

dlight's CPU Contraction rule (a fork patch) blocks an input along its register tile's vectors
only where the kernel reuses it enough to repay a copy made on every call; a matrix-vector
product (a batch-1 dense layer: alexnet's and mobilenet's classifiers, a decoder's projections
at one token) reads each weight once, so it kept the weight in its (K, N) layout and read a
short run of each row, rows kilobytes apart: 7.9 GB/s against PyTorch's 17 (9216 x 4096,
1 thread, 2-core AMD EPYC). A weight that is a constant is copied once, at build time, so the
rule now blocks it whatever the reuse (the pipeline marks such arguments `layout_free_buffers`),
and the kernel streams it: 19.2 -> 8.7 ms there. Stock, which schedules nothing, and the fork
before this patch pass the weight in its own layout to the kernel on every call; here the
kernel gets it blocked, and the result matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch

from .relaxrun import import_torch, kernel_calls, run_llvm


def test_a_batch_one_dense_layer_reads_its_weight_blocked() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU()).eval()
    x = torch.randn(1, 512)
    with torch.no_grad():
        want = model(x).numpy()
    seen, record = kernel_calls()
    got = run_llvm(import_torch(model, x), x.numpy(), instrument=record)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    matmuls = [(n, s) for n, s in seen if "matmul" in n]  # fused_matmul_add_... too
    assert matmuls, seen
    in_its_layout = [(n, s) for n, s in matmuls if {(512, 1024), (1024, 512)} & set(s)]
    assert not in_its_layout, f"the weight reaches the kernel in its own layout: {in_its_layout}"
    blocked = [
        s for _, s in matmuls if any(len(dims) == 3 and np.prod(dims) == 512 * 1024 for dims in s)
    ]
    assert blocked, f"no kernel reads the weight blocked: {matmuls}"
