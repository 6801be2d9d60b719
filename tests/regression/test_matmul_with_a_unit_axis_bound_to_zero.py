"""Patch: a matmul whose unit batch axis is bound to 0 is scheduled like any other.

PyTorch's matmul of a transposed 3-D operand by a 2-D weight (SegFormer's decode head:
`x.flatten(2).transpose(1, 2)` into a Linear layer) is exported as an expand of each operand
and a batched matmul of batch 1; attention's `probs @ v` of 4-D tensors as reshapes into one.
`FuseMovesIntoMatmul` builds each as one kernel, its moves inlined and its indices simplified
by StmtSimplify, which binds the batch axis's iterator to 0, the only value its loop of one
iteration takes. The CPU rules wanted each iterator bound to its own loop's variable, so the
Contraction rule declined the kernel, and it ran as serial scalar loops: SegFormer-B0's 64 x 64
decode head took 15 ms for a 1024 x 64 @ 64 x 256 layer, and the model 103 ms (ONNX Runtime
71). On the fork the kernel gets its register tile, its vectors and a blocked weight. Stock
0.26.0 schedules no CPU kernel (serial scalar loops), so the check of the schedule fails there.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import (
    host_target,
    import_torch,
    kernels,
    lower_default,
    numpy_of,
    run_llvm,
    vector_extents,
)


class DecodeHeadMLP(torch.nn.Module):
    """SegFormer's decode-head MLP: a map's channels as the features of its points."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(64, 256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x.flatten(2).transpose(1, 2))


class ProbsTimesValues(torch.nn.Module):
    """Attention's `probs @ v` of one head over 64 keys (SegFormer's reduced sequence)."""

    def __init__(self) -> None:
        super().__init__()
        self.v = torch.nn.Linear(64, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keys = x[:, None, :64]  # (1, 1, 64, 64)
        probs = torch.softmax(x[:, None] @ keys.transpose(-1, -2) / 8, dim=-1)
        return probs @ self.v(keys)  # (1, 1, 256, 64) @ (1, 1, 64, 32)


def _cases() -> dict[str, tuple[torch.nn.Module, torch.Tensor]]:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return {
        "decode-head-mlp": (DecodeHeadMLP(), torch.randn(1, 64, 32, 32, generator=g)),
        "probs-times-values": (ProbsTimesValues(), torch.randn(1, 256, 64, generator=g)),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_matmul_with_a_unit_axis_at_zero_is_vectorized(name: str) -> None:
    model, x = CASES[name]
    lowered = kernels(lower_default(import_torch(model, x), host_target()))
    # (a weight's blocked copy is computed at build time: no kernel of the module)
    matmuls = {n: f for n, f in lowered.items() if "matmul" in n}
    assert matmuls, sorted(lowered)
    for n, func in matmuls.items():
        assert vector_extents(func), f"{n} is not scheduled (serial scalar loops)\n{func}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_matmul_with_a_unit_axis_at_zero_matches_pytorch(name: str) -> None:
    model, x = CASES[name]
    got = run_llvm(import_torch(model, x), numpy_of(x), target=host_target())
    with torch.no_grad():
        want = model.eval()(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
