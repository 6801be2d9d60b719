"""Patch: sums, means, scans and norms of float16 and bfloat16 tensors accumulate in float32.

PyTorch accumulates them in float32 and rounds the result once; the importer reduced in the
half precision itself. A float16 sum of 4096 values of 0.01 stopped growing near 32 (PyTorch:
40.97), a layer's mean over a long sequence drifted, and a float16 sum of squares overflowed
to inf, all with no error. On the fork each matches PyTorch at float16's precision.
"""

from __future__ import annotations

import numpy as np
import torch

from .relaxrun import eager_and_tvm


class Pooled(torch.nn.Module):
    """What a half-precision model reduces: a mean over the sequence, a running count, a
    norm, a variance."""

    def forward(self, x: torch.Tensor, big: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            x.sum(),
            x.mean(dim=-1),
            x.cumsum(-1)[..., 4095],
            torch.linalg.vector_norm(big),
            x.var(dim=-1),
        )


def test_float16_reductions_match_pytorch() -> None:
    x = torch.full((2, 4096), 0.01, dtype=torch.float16)
    x[1] += torch.linspace(0, 1, 4096, dtype=torch.float16)
    big = torch.full((4,), 300.0, dtype=torch.float16)
    got, want = eager_and_tvm(Pooled(), x, big)
    assert [g.dtype for g in got] == [np.float16] * 5
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=1e-3)
