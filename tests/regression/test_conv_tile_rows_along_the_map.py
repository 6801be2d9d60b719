"""Patch: a conv vectorized along its output channels takes register-tile rows along its
map's points, row after row, where the map's sides have no divisor that fills the tile.

A conv whose output width takes no whole vector (alexnet's 13 x 13 and 27 x 27 maps,
squeezenet's 39 x 39 and 9 x 9) is vectorized along its output channels, and the tile's rows
came from the map's sides: only their divisors up to 8 (1 and 3 for 9, 27 and 39; 1 for 13,
whose rows of 2 then ran under a predicate), 4 or 6 accumulators where the FMA units need 8 to
12. On the fork the block runs over the map's points as one axis and the tile takes 6 of
them (12 accumulators of 2 AVX2 vectors), the last tile's rows past the map's end under a
predicate: alexnet's 384 -> 256 conv on 13 x 13 ran 1.4x faster. Stock 0.26.0 schedules no CPU
kernel (serial scalar loops), so the structural check fails there; the series before the
patch tiles 2 rows of the 13 x 13 map.
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
    nodes,
    numpy_of,
    run_llvm,
    unrolled_rows,
)

# AVX2: 8 float32 lanes; 64 output channels take 2 vectors a tile
# (name, batch, input channels, output channels, kernel, map, bias and ReLU)
CONVS = [
    ("3x3-13x13", 1, 48, 64, 3, 13, True),
    ("5x5-27x27-batch2", 2, 16, 32, 5, 27, True),
    ("1x1-9x9", 1, 64, 32, 1, 9, True),
    ("3x3-13x13-bare", 1, 16, 32, 3, 13, False),
]
IDS = [c[0] for c in CONVS]


@functools.cache
def _model(cin: int, cout: int, k: int, epilogue: bool) -> torch.nn.Module:
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(cin, cout, k, padding=k // 2, bias=epilogue)
    return torch.nn.Sequential(conv, torch.nn.ReLU()) if epilogue else conv


def _example(n: int, cin: int, size: int) -> torch.Tensor:
    return torch.randn(n, cin, size, size, generator=torch.Generator().manual_seed(1))


def _accumulators(func: tirx.PrimFunc) -> list[list[int]]:
    """The shapes of the buffers the conv's tile accumulates in."""
    return [
        [int(d) for d in buf.shape]
        for block in nodes(func, tirx.SBlock)
        for buf in block.alloc_buffers
        if buf.name.startswith("conv2d_nchw")
    ]


@pytest.mark.parametrize("name, n, cin, cout, k, size, epilogue", CONVS, ids=IDS)
def test_channel_vectorized_conv_tiles_rows_along_the_map_s_points(
    name: str, n: int, cin: int, cout: int, k: int, size: int, epilogue: bool
) -> None:
    mod = import_torch(_model(cin, cout, k, epilogue), _example(n, cin, size))
    lowered = kernels(lower_default(mod, AVX2))
    found = {name: f for name, f in lowered.items() if "conv2d" in name}
    assert len(found) == 1, sorted(lowered)
    (func,) = found.values()
    rows = sorted({int(loop.extent) for loop in unrolled_rows(func.body)})
    assert rows == [6], f"{name}: the tile's rows are {rows}, not 6 along the map\n{func}"
    assert [n, size * size, cout] in _accumulators(func), f"{name}\n{func}"


@pytest.mark.parametrize("name, n, cin, cout, k, size, epilogue", CONVS, ids=IDS)
@pytest.mark.parametrize("target", ["llvm", "host"])
def test_channel_vectorized_conv_matches_pytorch(
    name: str, n: int, cin: int, cout: int, k: int, size: int, epilogue: bool, target: str
) -> None:
    model, x = _model(cin, cout, k, epilogue), _example(n, cin, size)
    mod = import_torch(model, x)
    got = run_llvm(mod, numpy_of(x), target=host_target() if target == "host" else "llvm")
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
