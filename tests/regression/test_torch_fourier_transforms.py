"""Patch: PyTorch's Fourier transforms import (FNet; `torch.fft.*`).

`aten._fft_r2c`, `_fft_c2c` and `_fft_c2r` had no converter ("Unsupported function types
['_fft_c2c.default']"): transformers' FNet, whose token mixing is
`torch.fft.fftn(hidden, dim=(1, 2)).real`, stopped at import, and so did PyTorch's op tests of
`fft.*` and `stft` (66 cases). On the fork each is a discrete Fourier transform on the complex
tensor's real [..., 2] form (one product with cosine and sine matrices per axis, in float64,
rounded once): the results match PyTorch and are no further from a float64 reference than
PyTorch's own FFT.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

CASES = {
    "fnet_mixing": (lambda x: torch.fft.fftn(x, dim=(1, 2)).real, (2, 16, 24)),
    "fft": (lambda x: torch.view_as_real(torch.fft.fft(x.to(torch.complex64))), (3, 7)),
    "ifft_ortho": (
        lambda x: torch.view_as_real(torch.fft.ifft(x.to(torch.complex64), norm="ortho")),
        (3, 8),
    ),
    "rfft_magnitude": (lambda x: torch.fft.rfft(x).abs(), (3, 10)),
    "rfft2_forward_norm": (
        lambda x: torch.view_as_real(torch.fft.rfft2(x, norm="forward")),
        (2, 6, 9),
    ),
    "irfft_round_trip": (lambda x: torch.fft.irfft(torch.fft.rfft(x), n=9), (3, 9)),
    "irfft2_round_trip": (lambda x: torch.fft.irfft2(torch.fft.rfft2(x)), (2, 6, 8)),
    "hfft": (lambda x: torch.fft.hfft(torch.view_as_complex(x)), (4, 5, 2)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_transform_matches_pytorch(name: str) -> None:
    f, shape = CASES[name]
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    got, want = eager_and_tvm(Lambda(f), x)
    exact = Lambda(f)(x.double()).numpy()
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5 * np.abs(exact).max())
    # no less accurate than PyTorch's FFT against a float64 transform (with float32's rounding)
    ours, theirs = np.abs(got[0] - exact).max(), np.abs(want[0] - exact).max()
    assert ours <= 2 * theirs + 4 * np.finfo(np.float32).eps * np.abs(exact).max()
