"""Patch: a strided vector load is contiguous vector loads and one shuffle on CPU.

A vectorized loop reading every second element of a buffer (a stride-2 conv or pooling window
along its width) becomes a load at a `Ramp` index of stride 2, which the LLVM code generator
emits lane by lane: 16 scalar loads and inserts per AVX-512 vector. mobilenet_v2's stride-2
depthwise conv ran at a quarter of its stride-1 twin's speed. The fork's
`LoadStridedVectorsContiguously` (right after `VectorizeLoop`) loads the span the lanes lie in as
contiguous vectors and picks them with a `Shuffle`. Measured (1 thread, AMD EPYC znver4): that
conv 0.320 -> 0.224 ms, a 3x3 stride-2 max pool 0.335 -> 0.263 ms. Stock keeps the stride-2
load.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm.script import ir as I
from tvm.script import tirx as T

from .relaxrun import buffer_loads, host_target, import_torch, lowered_tir, run_llvm

LANES = 16


def _every_second():
    @I.ir_module
    class Module:
        @T.prim_func(s_tir=True)
        def main(A: T.Buffer((2 * LANES - 1,), "float32"), B: T.Buffer((LANES,), "float32")):
            for i in T.vectorized(LANES):
                B[i] = A[i * 2]

    return Module


def _strides(func) -> list[int]:
    return [
        int(load.indices[-1].stride)
        for load in buffer_loads(func)
        if isinstance(load.indices[-1], tvm.tirx.Ramp)
    ]


def test_stride_2_vector_load_is_two_contiguous_loads() -> None:
    target = tvm.target.Target({"kind": "llvm", "mcpu": "skylake-avx512"})
    funcs = lowered_tir(lambda: tvm.compile(_every_second(), target=target))
    assert _strides(funcs["main"]) == [1, 1], _strides(funcs["main"])


def test_every_second_element_is_read() -> None:
    lib = tvm.compile(_every_second(), target="llvm")
    a = np.arange(2 * LANES - 1, dtype="float32")
    b = tvm.runtime.tensor(np.zeros(LANES, "float32"))
    lib["main"](tvm.runtime.tensor(a), b)
    np.testing.assert_array_equal(b.numpy(), a[::2])


@pytest.mark.parametrize(
    "model, shape",
    [
        (torch.nn.Conv2d(96, 96, 3, 2, 1, groups=96, bias=False), (1, 96, 40, 40)),
        (torch.nn.Conv2d(48, 48, 5, 2, 2, groups=48, bias=False), (1, 48, 28, 28)),
        (torch.nn.MaxPool2d(3, 2, 1), (1, 32, 56, 56)),
    ],
    ids=["depthwise-3x3", "depthwise-5x5", "max-pool"],
)
def test_stride_2_windows_match_pytorch(model: torch.nn.Module, shape: tuple) -> None:
    torch.manual_seed(0)
    x = torch.randn(*shape)
    with torch.no_grad():
        want = model.eval()(x).numpy()
    got = run_llvm(import_torch(model, x), x.numpy(), target=host_target())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
