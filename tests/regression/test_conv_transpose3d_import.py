"""Patch: the PyTorch importer accepts ConvTranspose3d (BUGS.md section 1, volumetric models).

On stock 0.26.0 from_exported_program stops with "Unsupported transposed convolution
dimensionality: 5" (and from_fx has no converter at all); on the fork a volumetric decoder
imports, builds for llvm and matches PyTorch, also after ConvertLayout to NDHWC.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program, from_fx

from .relaxrun import run_llvm

RTOL, ATOL = 1e-4, 1e-4


class VolumetricDecoder(torch.nn.Module):
    """Two upsampling stages, the second grouped and dilated, as in 3-D segmentation decoders."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.ConvTranspose3d(8, 8, 4, stride=2, padding=1),
            torch.nn.BatchNorm3d(8),
            torch.nn.ReLU(),
            torch.nn.ConvTranspose3d(
                8,
                4,
                3,
                stride=(1, 2, 2),
                padding=1,
                output_padding=(0, 1, 1),
                groups=2,
                dilation=(1, 2, 2),
            ),
            torch.nn.BatchNorm3d(4),
            torch.nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@pytest.fixture(scope="module")
def decoder() -> tuple[torch.nn.Module, torch.Tensor, np.ndarray]:
    torch.manual_seed(0)
    model = VolumetricDecoder().eval()
    with torch.no_grad():
        for bn in (model.net[1], model.net[4]):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 8, 3, 4, 4)
    with torch.no_grad():
        return model, x, model(x).numpy()


def test_exported_program(decoder) -> None:
    model, x, expected = decoder
    mod = from_exported_program(torch.export.export(model, (x,)), keep_params_as_input=False)
    assert 'kernel_layout="IODHW"' in mod.script()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=RTOL, atol=ATOL)


def test_functional_with_bias() -> None:
    torch.manual_seed(1)
    w, b = torch.randn(6, 2, 2, 3, 3), torch.randn(4)

    class Func(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.conv_transpose3d(
                x, w, b, stride=2, padding=(0, 1, 1), output_padding=1, groups=2
            )

    x = torch.randn(2, 6, 2, 3, 3)
    mod = from_exported_program(torch.export.export(Func(), (x,)), keep_params_as_input=False)
    expected = Func()(x).numpy()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=RTOL, atol=ATOL)


def test_fx() -> None:
    # The FX importer has no BatchNorm3d converter (a separate gap), so no batch norm here.
    torch.manual_seed(2)
    model = torch.nn.Sequential(
        torch.nn.ConvTranspose3d(4, 4, 3, stride=2, padding=1, output_padding=1, groups=2),
        torch.nn.ReLU(),
        torch.nn.ConvTranspose3d(4, 2, 2, stride=(1, 2, 2), dilation=2, bias=False),
    ).eval()
    x = torch.randn(1, 4, 2, 3, 3)
    with torch.no_grad():
        expected = model(x).numpy()
        mod = from_fx(torch.fx.symbolic_trace(model), [(list(x.shape), "float32")])
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=RTOL, atol=ATOL)


def test_ndhwc_after_convert_layout(decoder) -> None:
    model, x, expected = decoder
    mod = from_exported_program(torch.export.export(model, (x,)), keep_params_as_input=False)
    mod = relax.transform.ConvertLayout({"relax.nn.conv3d_transpose": ["NDHWC", "ODHWI"]})(mod)
    assert 'data_layout="NDHWC"' in mod.script()
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), expected, rtol=RTOL, atol=ATOL)
