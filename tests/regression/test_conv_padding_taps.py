"""Patch: convolutions skip the kernel taps that read only padding.

DeepLabV3's head runs 3 x 3 convolutions at atrous rates 12, 24 and 36; on a 10 x 10 feature
map (a 160 x 160 image) every tap but the centre one reads padding at every output position.
On stock 0.26.0 they are legalized over the whole kernel, 9x the multiply-adds that compute
anything. On the fork the taps that read only padding are sliced off the kernel, and results
still match PyTorch (2-D, asymmetric dilation, 1-D, 3-D, grouped).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax

from .relaxrun import import_torch, run_llvm
from .test_conv_transpose_phases import _reduction_iterations


class _Aspp(torch.nn.Module):
    """The atrous pyramid of torchvision's DeepLabHead, on a small channel count."""

    def __init__(self) -> None:
        super().__init__()
        self.branches = torch.nn.ModuleList(
            torch.nn.Conv2d(16, 8, 3, padding=rate, dilation=rate, bias=False)
            for rate in (12, 24, 36)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.relu(b(x)) for b in self.branches], dim=1)


MODELS = {
    "aspp": (_Aspp, (1, 16, 10, 10)),
    "rows_only": (lambda: torch.nn.Conv2d(4, 6, 3, padding=(6, 1), dilation=(6, 1)), (1, 4, 5, 7)),
    "conv1d_strided": (lambda: torch.nn.Conv1d(4, 3, 5, 2, padding=6, dilation=3), (2, 4, 4)),
    "conv3d": (lambda: torch.nn.Conv3d(2, 4, 3, padding=2, dilation=2), (1, 2, 2, 6, 6)),
    "grouped": (lambda: torch.nn.Conv2d(4, 4, 5, padding=8, dilation=4, groups=2), (1, 4, 6, 6)),
}


def _model(name: str):
    torch.manual_seed(0)
    make, shape = MODELS[name]
    model, x = make().eval(), torch.randn(*shape)
    return model, x, import_torch(model, x)


def test_aspp_multiplies_no_padding() -> None:
    """The three rate-12/24/36 branches reduce over their centre tap only: a ninth of the
    full kernels' work (the legalized reduction blocks' iterations)."""
    _, _, mod = _model("aspp")
    work = _reduction_iterations(relax.transform.LegalizeOps()(mod))
    full = 3 * 8 * 10 * 10 * 16 * 9  # three branches: out channels, map, in channels, taps
    assert work * 9 == full, f"{work} reduction iterations; {full // 9} compute anything"


@pytest.mark.parametrize("name", list(MODELS))
def test_results_match_pytorch(name: str) -> None:
    model, x, mod = _model(name)
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=1e-4, atol=1e-4)


def test_nothing_is_computed_from_the_weights_alone_at_run_time() -> None:
    """With the weights as constants, the built program computes nothing from constants alone
    (the fork slices the kernel to its useful taps: that slice must be folded at compile time,
    not recomputed on every call)."""
    _, _, mod = _model("aspp")
    with tvm.target.Target("llvm"):
        built = relax.get_pipeline("default")(mod)
    bindings = [b for block in built["main"].body.blocks for b in block.bindings]
    allocated = {
        b.var
        for b in bindings
        if isinstance(b.value, relax.Call) and "alloc" in str(getattr(b.value.op, "name", ""))
    }
    constant_only = []
    for value in (b.value for b in bindings):
        if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.GlobalVar):
            inputs = [a for a in value.args if a not in allocated]
            if inputs and all(isinstance(a, relax.Constant) for a in inputs):
                constant_only.append(value.op.name_hint)
    assert not constant_only, f"computed from constants at run time: {constant_only}"
