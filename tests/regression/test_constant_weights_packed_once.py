"""Patch: a constant weight's layout copy is made once, at build time, not on every call.

dlight's CPU Contraction rule (a fork patch) copies a dense layer's K x N weight into blocks of
columns (N/32 x K x 32 on AVX-512) so that a register tile's vectors are contiguous; the copy
was a loop nest of the kernel, run on every call, with a 9 MB workspace allocated for it
(BERT-base's 768 x 3072 layers). With the weight a constant (`keep_params_as_input=False`,
as the lanes import models) the build now makes the blocked copy once and the kernel reads
it: BERT-base at 64 tokens, 1 thread, went from 134 to 109 ms (2-core AMD EPYC). Stock,
which schedules nothing, and the fork before this patch both pass the weight in its own
layout to the kernel on every call; here no kernel gets it, and the result matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch
import tvm

from .relaxrun import import_torch, run_llvm


def test_a_dense_layer_reads_its_weight_blocked_at_build_time() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(768, 3072), torch.nn.GELU()).eval()
    x = torch.randn(1, 64, 768)
    with torch.no_grad():
        want = model(x).numpy()
    shapes_seen: list[tuple[str, list[tuple[int, ...]]]] = []

    def record(func, name, before_run, ret_value, *args):  # the VM instrument signature
        if before_run:
            shapes = [tuple(a.shape) for a in args if isinstance(a, tvm.runtime.Tensor)]
            shapes_seen.append((str(name), shapes))

    got = run_llvm(import_torch(model, x), x.numpy(), instrument=record)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    kernels = [(n, s) for n, s in shapes_seen if not n.startswith("vm.builtin")]
    assert any("matmul" in n for n, _ in kernels), kernels  # fused_matmul_add_... too
    in_its_layout = [(n, s) for n, s in kernels if {(768, 3072), (3072, 768)} & set(s)]
    assert not in_its_layout, (
        f"kernels get the weight in its own layout every call: {in_its_layout}"
    )
