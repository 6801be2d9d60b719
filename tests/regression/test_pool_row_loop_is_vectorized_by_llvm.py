"""Patch: a pool is scheduled as a serial row loop that LLVM vectorizes.

The CPU Contraction rule scheduled a max or average pool as it schedules a conv: a register
tile vectorized along the output row, the padding (a max pool's -inf border) first copied into
a padded input. A pool reuses no value between its output points, and where no whole vector
divides the row the tile's vector was the row's largest divisor that fits one: squeezenet's
stride-2 3x3 pool over 79 x 79 (39 outputs a row) took vectors of 3 lanes, each lane of its
stride-2 loads gathered on its own, after a copy of its 1.6 MB input: a fifth of ONNX
Runtime's speed. On the fork the pool's padding is computed where it is read, its window
unrolled, its outer loops parallel and its row loop serial, which LLVM vectorizes (the
stride-2 window's even and odd elements as wide loads and shuffles): 5x faster. Stock 0.26.0
schedules no CPU kernel (serial loops, nothing parallel), so the structural check fails there;
the series before the patch vectorizes the row 3 lanes wide.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm import tirx

from .relaxrun import (
    AVX2,
    assembly,
    host_target,
    import_torch,
    kernels,
    lower_default,
    nodes,
    numpy_of,
    run_llvm,
)

# (name, the pool, its input's shape)
POOLS = [
    ("max-3x3-stride2-ceil-79", torch.nn.MaxPool2d(3, 2, ceil_mode=True), (1, 64, 79, 79)),
    ("avg-3x3-stride1-pad1-17", torch.nn.AvgPool2d(3, 1, 1), (1, 128, 17, 17)),
]
IDS = [p[0] for p in POOLS]


def _example(shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1))


def _kinds(func: tirx.PrimFunc) -> list[tirx.ForKind]:
    return [loop.kind for loop in nodes(func, tirx.For)]


@pytest.mark.parametrize("name, pool, shape", POOLS, ids=IDS)
def test_pool_is_a_parallel_serial_row_loop(
    name: str, pool: torch.nn.Module, shape: tuple[int, ...]
) -> None:
    lowered = kernels(lower_default(import_torch(pool, _example(shape)), AVX2))
    found = [f for kernel, f in lowered.items() if "pool" in kernel]
    assert len(found) == 1, sorted(lowered)
    func = found[0]
    kinds = _kinds(func)
    assert tirx.ForKind.PARALLEL in kinds, f"{name}: nothing parallel\n{func}"
    assert tirx.ForKind.VECTORIZED not in kinds, f"{name}: a TIR vector along the row\n{func}"
    assert kinds.count(tirx.ForKind.UNROLLED) == 2, f"{name}: the window is not unrolled\n{func}"
    buffers = [buf for block in nodes(func, tirx.SBlock) for buf in block.alloc_buffers]
    padded = [buf.name for buf in buffers if buf.name.startswith("pad")]
    assert not padded, f"{name}: the input is copied into {padded}\n{func}"
    # LLVM vectorized the row loop: AVX2 (256-bit) max or add instructions
    asm = assembly(func, AVX2)
    assert ("vmaxps\t%ymm" if "max" in name else "vaddps\t%ymm") in asm, name


@pytest.mark.parametrize("name, pool, shape", POOLS, ids=IDS)
@pytest.mark.parametrize("target", ["llvm", "host"])
def test_pool_matches_pytorch(
    name: str, pool: torch.nn.Module, shape: tuple[int, ...], target: str
) -> None:
    x = _example(shape)
    got = run_llvm(
        import_torch(pool, x), numpy_of(x), target=host_target() if target == "host" else "llvm"
    )
    with torch.no_grad():
        want = pool(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
