"""Patch: native batch norm returns the batch's mean and inverse standard deviation.

`native_batch_norm` in training mode (and `_native_batch_norm_legit`) returns the output, the
batch's mean and 1 / sqrt(biased variance + eps). The importer returned the new running mean
and zeros in their place, and without running statistics the normalized output for each of
the three, silently. On the fork all three match PyTorch, with and without running
statistics, and InstanceNorm (which reads only the output) matches as before.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import eager_and_tvm


class NativeBatchNorm(torch.nn.Module):
    def __init__(self, running: bool) -> None:
        super().__init__()
        self.running = running

    def forward(
        self,
        x: torch.Tensor,
        w: torch.Tensor,
        b: torch.Tensor,
        mean: torch.Tensor,
        var: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if not self.running:
            return torch.ops.aten.native_batch_norm(x, w, b, None, None, True, 0.5, 0.6)
        # clones: the op updates the running statistics in place
        return torch.ops.aten.native_batch_norm(x, w, b, mean.clone(), var.clone(), True, 0.5, 0.6)


@pytest.mark.parametrize("running", [True, False], ids=["running-stats", "no-stats"])
def test_native_batch_norm_outputs_match_pytorch(running: bool) -> None:
    torch.manual_seed(0)
    args = (
        torch.randn(4, 3, 5) * 3 + 1,
        torch.randn(3),
        torch.randn(3),
        torch.randn(3),
        torch.rand(3) + 0.5,
    )
    got, want = eager_and_tvm(NativeBatchNorm(running), *args)
    assert len(got) == len(want) == 3
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_instance_norm_matches_pytorch() -> None:
    torch.manual_seed(0)
    got, want = eager_and_tvm(
        torch.nn.InstanceNorm2d(3, affine=True).eval(), torch.randn(2, 3, 6, 6)
    )
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_inference_saves_no_statistics() -> None:
    """In inference native_batch_norm returns the output and two empty tensors (CPU): the
    importer returned the output in their place (a (3, 2, 4) tensor for a (0,) one)."""

    class Inference(torch.nn.Module):
        def forward(
            self,
            x: torch.Tensor,
            w: torch.Tensor,
            b: torch.Tensor,
            mean: torch.Tensor,
            var: torch.Tensor,
        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            return torch.ops.aten.native_batch_norm(x, w, b, mean, var, False, 0.1, 1e-5)

    torch.manual_seed(0)
    args = (torch.randn(3, 2, 4), torch.randn(2), torch.randn(2), torch.randn(2), torch.rand(2))
    got, want = eager_and_tvm(Inference(), *args)
    assert [g.shape for g in got] == [tuple(w.shape) for w in want]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
