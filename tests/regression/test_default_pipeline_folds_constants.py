"""Patch: the default build pipeline computes what depends only on constants at compile time.

`tvm.compile(mod, target="llvm")` uses `default_build_pipeline`, which on stock 0.26.0 does
not fold constants. After `ConvertLayout` to NHWC every conv weight gets a layout transform
(`permute_dims` of a constant), and stock TVM runs those transforms on every call: in the
DCGAN generator they cost more than a sixth of the run (issue 12, NHWC vs NCHW). On the fork
they are folded into new constants, so no kernel reads a weight in its original layout,
and the results still match PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch
import tvm
from tvm import relax

from .relaxrun import import_torch, run_llvm

NHWC = {"relax.nn.conv2d": ["NHWC", "OHWI"]}


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(8, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 4, 3, stride=2),
        torch.nn.Tanh(),
    ).eval()


def test_nhwc_weights_are_transformed_once_at_compile_time() -> None:
    model = _model()
    x = torch.randn(2, 8, 10, 10)
    with torch.no_grad():
        expected = model(x).numpy()
    mod = relax.transform.ConvertLayout(NHWC)(import_torch(model, x))
    calls: list[tuple[str, list[tuple[int, ...]]]] = []

    def record(func, name, before_run, ret_value, *args):  # the VM instrument signature
        if before_run:
            shapes = [tuple(a.shape) for a in args if isinstance(a, tvm.runtime.Tensor)]
            calls.append((str(name), shapes))

    out = run_llvm(mod, x.numpy(), instrument=record)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    weight_shapes = {tuple(p.shape) for p in model.parameters() if p.dim() == 4}
    on_weights = [(n, s) for n, s in calls if weight_shapes & set(s)]
    assert not on_weights, f"kernels run on constant weights at every call: {on_weights}"
    assert any("conv2d" in n for n, _ in calls), calls  # the instrument saw the convs


def test_a_folded_weight_is_kept_once_not_beside_its_original(tmp_path) -> None:
    """A dense layer's weight is transposed at compile time; the original, which nothing reads
    any more, is not also kept in the library (nor loaded at run time): the library is about
    the size of its weights, not twice it."""
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)
    ).eval()
    x = torch.randn(1, 64, 256)
    with torch.no_grad():
        expected = model(x).numpy()
    mod = import_torch(model, x)
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=1e-4, atol=1e-4)
    path = tmp_path / "dense.so"
    tvm.compile(mod, target="llvm").export_library(str(path))
    weights = sum(p.numel() * 4 for p in model.parameters())
    assert path.stat().st_size < 1.5 * weights, (path.stat().st_size, weights)
