"""Patch: a tile of an odd number of vector registers is computed a register at a time.

A batch-1 dense layer is a matrix-vector product: the Contraction rule gives it no rows and a
vector of up to 8 registers that divides its outputs. An ImageNet classifier's 1000 outputs take
40 float32 lanes, 5 AVX2 registers, and the tile was one 40-lane TIR vector, its write-back one
40-lane read of the accumulators. LLVM then holds them as one <40 x float> value, a type it
legalizes lane by lane: every unrolled step of the reduction extracted and reinserted all 40
lanes (vextractf128, vinsertps), and alexnet's 4096 -> 1000 layer ran at 0.6x the memory speed
of its 9216 -> 4096 one. On the fork the tile and its write-back are 5 vectors of 8 lanes each
(an unrolled loop over the registers): no lane shuffles, the same layer in 0.6x the time. Stock
0.26.0 schedules no CPU kernel (serial scalar loops), so the check of the tile fails there.
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

# (input features, output features): alexnet's and vgg's classifier, resnet18's
LAYERS = [(4096, 1000), (512, 1000)]
IDS = [f"{k}to{n}" for k, n in LAYERS]


def _example(features: int) -> torch.Tensor:
    return torch.randn(1, features, generator=torch.Generator().manual_seed(2))


def _layer(k: int, n: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(k, n)


@pytest.mark.parametrize("k, n", LAYERS, ids=IDS)
def test_classifier_tile_is_vectors_of_one_register(k: int, n: int) -> None:
    lowered = kernels(lower_default(import_torch(_layer(k, n), _example(k)), AVX2))
    found = [f for name, f in lowered.items() if "matmul" in name and "pack" not in name[-5:]]
    found = [f for f in found if any(b.name_hint.endswith("update") for b in nodes(f, tirx.SBlock))]
    assert len(found) == 1, sorted(lowered)
    func = found[0]
    vectors = [loop for loop in nodes(func, tirx.For) if loop.kind == tirx.ForKind.VECTORIZED]
    assert vectors, f"no TIR vector\n{func}"
    # every vector one AVX2 register of 8 float32 lanes (the tile's 40 lanes were one vector)
    assert sorted({int(loop.extent) for loop in vectors}) == [8], func
    asm = assembly(func, AVX2)
    assert "vfmadd231ps" in asm
    # no lane-by-lane legalization of a 40-lane value
    assert "vinsertps" not in asm and "vextractps" not in asm, "accumulators shuffled lane by lane"


@pytest.mark.parametrize("k, n", LAYERS, ids=IDS)
@pytest.mark.parametrize("target", ["llvm", "host"])
def test_classifier_matches_pytorch(k: int, n: int, target: str) -> None:
    layer, x = _layer(k, n), _example(k)
    got = run_llvm(
        import_torch(layer, x), numpy_of(x), target=host_target() if target == "host" else "llvm"
    )
    with torch.no_grad():
        want = layer(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
