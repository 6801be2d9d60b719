"""Patch: on CPU, a batch norm is a per-channel scale and shift, and each chain of elementwise
kernels is one kernel.

The default `llvm` pipeline ran every op of a chain as a kernel of its own: after each conv of
mobilenet_v2 a batch norm (which also returns its running statistics) and ReLU6's clip; after
each of efficientnet_b0's a batch norm, SiLU's sigmoid and its multiply. Each is a pass over
memory, an allocation and a call. The fork decomposes an inference batch norm into
`x * scale + shift` (scale and shift computed from the constants at build time, as PyTorch's
CPU kernel computes them) and fuses elementwise, broadcast and injective kernels (FuseOps over
them only; convs, dense layers and reductions stay apart). Measured (1 thread, 2-core AMD EPYC,
AVX-512, interleaved): mobilenet_v2 6.33 -> 5.70 ms, efficientnet_b0 10.3 -> 8.9 ms, both
compiling faster. Stock keeps a `batch_norm` kernel and one kernel per activation op.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm

from .relaxrun import host_target, import_torch, kernels, lower_default, run_llvm


class ConvBnAct(torch.nn.Module):
    """A conv, its batch norm and an activation: mobilenet_v2's and efficientnet_b0's block."""

    def __init__(self, act: torch.nn.Module) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(16)
        self.act = act
        with torch.no_grad():  # statistics other than the initial 0 and 1
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


ACTIVATIONS = {"relu6": torch.nn.ReLU6(), "silu": torch.nn.SiLU()}


def _case(name: str) -> tuple[tvm.IRModule, np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    model, x = ConvBnAct(ACTIVATIONS[name]).eval(), torch.randn(1, 8, 20, 20)
    with torch.no_grad():
        want = model(x).numpy()
    return import_torch(model, x), x.numpy(), want


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_the_conv_is_followed_by_one_kernel(name: str) -> None:
    mod, _, _ = _case(name)
    names = sorted(kernels(lower_default(mod, "llvm")))
    # the conv and one kernel after it, or (with the fork's epilogue fusion) one kernel
    assert len(names) <= 2 and not [n for n in names if "batch_norm" in n], names


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_results_match_pytorch(name: str) -> None:
    mod, x, want = _case(name)
    got = run_llvm(mod, x, target=host_target())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
