"""Patch: conv_transpose is lowered in every layout (BUGS.md section 1).

On stock TVM 0.26.0 any conv transpose outside NC[D]HW/IO[D]HW survives LegalizeOps and the
build dies in VM codegen; on the fork every layout is lowered and matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax

from .relaxrun import import_torch, run_llvm

RTOL, ATOL = 1e-4, 1e-5


def convert(mod: tvm.IRModule, op: str, layouts: list[str]) -> tvm.IRModule:
    converted = relax.transform.ConvertLayout({f"relax.nn.{op}": layouts})(mod)
    # The conversion must really have happened, or this test would prove nothing.
    assert f'data_layout="{layouts[0]}"' in converted.script(), converted.script()
    return converted


class Generator(torch.nn.Module):
    """The DCGAN-style generator of apache/tvm#17890, shrunk."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.ConvTranspose2d(16, 8, 4, 2, 1),
            torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(8, 3, 4, 2, 1),
            torch.nn.Tanh(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@pytest.fixture(scope="module")
def generator() -> tuple[torch.nn.Module, torch.Tensor, np.ndarray]:
    torch.manual_seed(0)
    model = Generator().eval()
    with torch.no_grad():
        # Non-trivial batch norm statistics, so a layout mix-up cannot cancel out.
        model.net[1].running_mean.uniform_(-0.5, 0.5)
        model.net[1].running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 16, 8, 8)
    with torch.no_grad():
        expected = model(x).numpy()
    return model, x, expected


@pytest.mark.parametrize("kernel_layout", ["OHWI", "HWOI", "OIHW", "IOHW"])
def test_generator_nhwc(generator, kernel_layout: str) -> None:
    model, x, expected = generator
    mod = convert(import_torch(model, x), "conv2d_transpose", ["NHWC", kernel_layout])
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=RTOL, atol=ATOL)


def test_conv1d_transpose_nwc_groups_dilation() -> None:
    torch.manual_seed(1)
    model = torch.nn.ConvTranspose1d(
        8, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=2
    ).eval()
    x = torch.randn(2, 8, 11)
    mod = convert(import_torch(model, x), "conv1d_transpose", ["NWC", "OWI"])
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=RTOL, atol=ATOL)


def _single_op(op, x: np.ndarray, w: np.ndarray, **attrs) -> tvm.IRModule:
    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorType(x.shape, "float32"))
    wv = relax.Var("w", relax.TensorType(w.shape, "float32"))
    with bb.function("main", [xv, wv]):
        with bb.dataflow():  # ConvertLayout rewrites dataflow blocks only
            out = bb.emit_output(bb.emit(op(xv, wv, **attrs)))
        bb.emit_func_output(out)
    return bb.get()


def test_conv3d_transpose_ndhwc() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 3, 4, 5)).astype("float32")
    w = rng.standard_normal((4, 3, 2, 3, 3)).astype("float32")  # IODHW, groups=2 -> 6 out
    attrs = dict(strides=[2, 1, 2], padding=[1, 0, 1], output_padding=[1, 0, 1], groups=2)
    mod = _single_op(relax.op.nn.conv3d_transpose, x, w, **attrs)
    mod = convert(mod, "conv3d_transpose", ["NDHWC", "ODHWI"])
    expected = torch.nn.functional.conv_transpose3d(
        torch.from_numpy(x),
        torch.from_numpy(w),
        stride=(2, 1, 2),
        padding=(1, 0, 1),
        output_padding=(1, 0, 1),
        groups=2,
    ).numpy()
    np.testing.assert_allclose(run_llvm(mod, x, w), expected, rtol=RTOL, atol=ATOL)


def test_conv2d_transpose_asymmetric_padding_mixed_out_layout() -> None:
    """Data NHWC, kernel HWOI, output NCHW, padding (top, left, bottom, right) = (2, 0, 1, 1)."""
    rng = np.random.default_rng(4)
    x_nchw = rng.standard_normal((1, 4, 5, 6)).astype("float32")
    w_iohw = rng.standard_normal((4, 2, 3, 3)).astype("float32")  # groups=2 -> 4 out
    mod = _single_op(
        relax.op.nn.conv2d_transpose,
        x_nchw.transpose(0, 2, 3, 1),
        w_iohw.transpose(2, 3, 1, 0),
        strides=[2, 2],
        padding=[2, 0, 1, 1],
        dilation=[2, 1],
        groups=2,
        data_layout="NHWC",
        kernel_layout="HWOI",
        out_layout="NCHW",
    )
    full = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x_nchw), torch.from_numpy(w_iohw), stride=2, dilation=(2, 1), groups=2
    ).numpy()
    expected = full[:, :, 2 : full.shape[2] - 1, 0 : full.shape[3] - 1]
    got = run_llvm(mod, x_nchw.transpose(0, 2, 3, 1), w_iohw.transpose(2, 3, 1, 0))
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def test_convert_layout_with_distinct_out_layout(generator) -> None:
    """InferLayout with three layouts (data, kernel, out): the out layout is honoured."""
    model, x, expected = generator
    mod = convert(import_torch(model, x), "conv2d_transpose", ["NHWC", "OHWI", "NCHW"])
    assert 'out_layout="NCHW"' in mod.script()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=RTOL, atol=ATOL)
