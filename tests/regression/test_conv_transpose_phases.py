"""Patch: transposed convolutions on CPU skip the multiply-adds with inserted zeros.

On stock 0.26.0 a conv transpose is legalized as a convolution over the input dilated with
stride - 1 zeros, so a stride-2 layer does 4x the multiply-adds it needs (8x in 3-D). On the
fork, legalizing for llvm computes it by stride phases, without those, and results still match
PyTorch in NCHW, in NHWC (ConvertLayout), for a grouped, dilated decoder and in 3-D.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax, tirx

from .relaxrun import import_torch, run_llvm


def _generator() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.ConvTranspose2d(16, 32, 4, 1, 0, bias=False),
        torch.nn.BatchNorm2d(32),
        torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False),
        torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(16, 3, 4, 2, 1, bias=False),
        torch.nn.Tanh(),
    )


def _decoder() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.ConvTranspose2d(16, 16, 3, 2, 1, output_padding=1, groups=4),
        torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(16, 8, 3, 2, 2, dilation=2, groups=2),
    )


def _decoder3d() -> torch.nn.Module:
    return torch.nn.ConvTranspose3d(8, 4, 3, 2, 1, output_padding=1)


MODELS = {
    "dcgan": (_generator, (2, 16, 1, 1)),
    "decoder": (_decoder, (2, 16, 5, 5)),
    "decoder3d": (_decoder3d, (1, 8, 4, 4, 4)),
}


def _import(name: str, nhwc: bool = False):
    torch.manual_seed(0)
    make, shape = MODELS[name]
    model, x = make().eval(), torch.randn(*shape)
    mod = import_torch(model, x)
    if nhwc:
        mod = relax.transform.ConvertLayout({"relax.nn.conv2d_transpose": ["NHWC", "OHWI"]})(mod)
    return model, x, mod


def _reduction_iterations(mod: tvm.IRModule) -> int:
    """Iterations of all reduction blocks in the legalized PrimFuncs."""
    total = 0

    def visit(node) -> None:
        nonlocal total
        if isinstance(node, tirx.SBlock) and any(int(iv.iter_type) == 2 for iv in node.iter_vars):
            total += int(np.prod([int(iv.dom.extent) for iv in node.iter_vars]))

    for func in mod.functions.values():
        if isinstance(func, tirx.PrimFunc):
            tirx.stmt_functor.post_order_visit(func.body, visit)
    return total


@pytest.mark.parametrize("name", list(MODELS))
def test_no_multiply_adds_with_inserted_zeros(name: str) -> None:
    """Legalized for llvm, the reduction work is a fraction of the zero-inserting lowering's
    (which is what legalizing without a target still gives, on stock and fork alike)."""
    _, _, mod = _import(name)
    zero_inserting = _reduction_iterations(relax.transform.LegalizeOps()(mod))
    with tvm.target.Target("llvm"):
        work = _reduction_iterations(relax.transform.LegalizeOps()(mod))
    # stride 2 in every layer but the dcgan's first: at least 2.5x less (2-D: ~4x, 3-D: ~8x)
    assert work * 2.5 <= zero_inserting, f"{work} reduction iterations vs {zero_inserting}"


@pytest.mark.parametrize(
    ("name", "nhwc"), [("dcgan", False), ("dcgan", True), ("decoder", False), ("decoder3d", False)]
)
def test_results_match_pytorch(name: str, nhwc: bool) -> None:
    model, x, mod = _import(name, nhwc)
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=1e-4, atol=1e-4)
