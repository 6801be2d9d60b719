"""Patch: a conv vectorized along its output channels takes register-tile rows of both output
axes, not of the columns alone.

Where a conv's output width takes no whole vector (a 14 x 14 or 9 x 9 map, as in resnet's
later stages and squeezenet's classifier), the fork's CPU rule vectorizes the output channels,
and the tile's rows came from one axis: on a 9 x 9 map 3 rows of one AVX2 vector, 3
accumulators where the FMA units need 8 busy. The weight does not depend on the output's rows
either, so on the fork they take rows too (3 x 3 there; 2 x 2 rows of 2 vectors on 14 x 14):
resnet18's 256 -> 256 conv on 14 x 14 ran 1.7x faster. Stock 0.26.0 schedules no CPU kernel
(serial scalar loops), so the structural check fails there.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from tvm import tirx

from .relaxrun import (
    AVX2,
    host_target,
    import_torch,
    kernels,
    lower_default,
    numpy_of,
    run_llvm,
    unrolled_rows,
)

# AVX2: 8 float32 lanes, so neither 9 nor 14 columns take whole vectors
# (name, input channels, output channels, kernel, map): squeezenet's classifier (smaller) and
# a resnet stage-3 conv (narrower)
CONVS = [("1x1-9x9", 64, 40, 1, 9), ("3x3-14x14", 32, 64, 3, 14)]


@functools.cache
def _model(cin: int, cout: int, k: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, k, padding=k // 2), torch.nn.ReLU())


def _example(cin: int, size: int) -> torch.Tensor:
    return torch.randn(1, cin, size, size, generator=torch.Generator().manual_seed(1))


def _rows_in_rows(func: tirx.PrimFunc) -> list[tuple[int, int]]:
    """(outer, inner) extents of each unrolled loop of more than one iteration that holds
    another: a register tile's rows of two axes."""
    return [
        (int(loop.extent), int(inner.extent))
        for loop in unrolled_rows(func.body)
        for inner in unrolled_rows(loop.body)
    ]


@pytest.mark.parametrize("name, cin, cout, k, size", CONVS, ids=[c[0] for c in CONVS])
def test_channel_vectorized_conv_tiles_rows_of_both_axes(
    name: str, cin: int, cout: int, k: int, size: int
) -> None:
    mod = import_torch(_model(cin, cout, k), _example(cin, size))
    found = {n: f for n, f in kernels(lower_default(mod, AVX2)).items() if "conv2d" in n}
    assert len(found) == 1, sorted(kernels(lower_default(mod, AVX2)))
    (func,) = found.values()
    assert _rows_in_rows(func), f"{name}: the tile has rows of one axis at most\n{func}"


@pytest.mark.parametrize("name, cin, cout, k, size", CONVS, ids=[c[0] for c in CONVS])
@pytest.mark.parametrize("target", ["llvm", "host"])
def test_channel_vectorized_conv_matches_pytorch(
    name: str, cin: int, cout: int, k: int, size: int, target: str
) -> None:
    model, x = _model(cin, cout, k), _example(cin, size)
    mod = import_torch(model, x)
    got = run_llvm(mod, numpy_of(x), target=host_target() if target == "host" else "llvm")
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
