"""Patch: a linear or nearest resize to its input's own size is legalized as its input.

SegFormer's decode head interpolates each stage's map to the first stage's size, the first
stage's own among them (`F.interpolate(x, size=x.shape[2:], mode="bilinear")`). At a scale of 1
every output pixel maps to the input pixel of its own index, weight 1 on it and 0 on its
neighbors, yet stock legalizes it as a kernel that computes four indices and two weights per
pixel and gathers its four inputs: 3.5 ms of SegFormer-B0's run (256 px, 1 thread) for a copy.
On the fork the resize is its input: no kernel, the same values.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .relaxrun import host_target, import_torch, kernels, lower_default, numpy_of, run_llvm


class Interpolate(torch.nn.Module):
    def __init__(self, size: tuple[int, int], mode: str) -> None:
        super().__init__()
        self.size, self.mode = size, mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        corners = {} if self.mode == "nearest" else {"align_corners": self.mode.endswith("ac")}
        mode = self.mode.removesuffix("-ac")
        return F.interpolate(x, size=self.size, mode=mode, **corners) + 1


X = torch.randn(1, 8, 12, 10, generator=torch.Generator().manual_seed(0))
SAME = [("bilinear", (12, 10)), ("bilinear-ac", (12, 10)), ("nearest", (12, 10))]
OTHER = [("bilinear", (24, 20)), ("bilinear", (12, 11)), ("nearest", (6, 5))]


def _resizes(mode: str, size: tuple[int, int]) -> list[str]:
    mod = lower_default(import_torch(Interpolate(size, mode), X), host_target())
    return [name for name in kernels(mod) if "resize" in name]


@pytest.mark.parametrize("mode, size", SAME, ids=[m for m, _ in SAME])
def test_resize_to_its_own_size_has_no_kernel(mode: str, size: tuple[int, int]) -> None:
    assert _resizes(mode, size) == []


@pytest.mark.parametrize(
    "mode, size", SAME + OTHER, ids=[f"{m}-{s[0]}x{s[1]}" for m, s in SAME + OTHER]
)
def test_resize_matches_pytorch(mode: str, size: tuple[int, int]) -> None:
    model = Interpolate(size, mode).eval()
    got = run_llvm(import_torch(model, X), numpy_of(X), target=host_target())
    with torch.no_grad():
        want = model(X).numpy()
    if size == tuple(X.shape[2:]):
        np.testing.assert_array_equal(got, want)  # the input, plus 1
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode, size", OTHER, ids=[f"{m}-{s[0]}x{s[1]}" for m, s in OTHER])
def test_resize_to_another_size_keeps_its_kernel(mode: str, size: tuple[int, int]) -> None:
    assert _resizes(mode, size)
