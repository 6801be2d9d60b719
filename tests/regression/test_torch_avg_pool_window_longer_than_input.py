"""Patch: an average pool's window longer than its padded input is cut to that input.

transformers' EfficientNet pools its last feature map (1 x 1 at the registry's image size)
with `AvgPool2d(hidden_dim, ceil_mode=True)`: a 2560-wide window. PyTorch clips a window at
the padded input's end (the only window along that axis), so the result is the map's mean.
TVM padded the input to the whole window: 2560 x 2560 values per channel where the map holds
one, 2 x 2560 x 2560 x 2560 floats (134 GB) for a batch of 2, and the model stopped at run
time with "std::bad_alloc" on stock and fork. On the fork the importer cuts the window to the
padded input (same average: the divisor is the padded length, or the input's without
count_include_pad), and the model runs.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import tvm
from tvm import relax, tirx

from .relaxrun import import_torch, kernels, run_llvm


def _largest_buffer(mod: tvm.IRModule) -> int:
    """The most elements any buffer of the legalized kernels of `mod` is written with."""
    largest = 0
    for func in kernels(relax.transform.LegalizeOps()(mod)).values():

        def visit(node: object) -> None:
            nonlocal largest
            if isinstance(node, tirx.BufferStore):
                shape = [int(n) for n in node.buffer.shape]
                largest = max(largest, math.prod(shape))

        tirx.stmt_functor.post_order_visit(func.body, visit)
    return largest


def test_efficientnet_pooling_of_its_last_map() -> None:
    model = torch.nn.AvgPool2d(2560, ceil_mode=True).eval()  # EfficientNet-B7's hidden_dim
    x = torch.randn(2, 2560, 1, 1)
    mod = import_torch(model, x)
    # no kernel writes more values than the map holds (stock pads it to 2560 x 2560)
    assert _largest_buffer(mod) <= x.numel(), f"a buffer of {_largest_buffer(mod)} elements"
    np.testing.assert_allclose(run_llvm(mod, x.numpy()), model(x).numpy(), rtol=1e-6)


def test_window_longer_than_one_axis_with_padding() -> None:
    """A 9-high window over a 3-high map padded by 1 (5 rows), 2-wide along a 6-wide one."""
    for count_include_pad in (True, False):
        model = torch.nn.AvgPool2d(
            (9, 2), padding=1, ceil_mode=True, count_include_pad=count_include_pad
        )
        x = torch.randn(1, 3, 3, 6)
        mod = import_torch(model, x)
        # the map padded by 1, and by ceil_mode's stride - 1 more on the high side: 5 + 4 rows
        # (the window cut to 5 rows, its stride with it), 8 + 1 columns
        assert _largest_buffer(mod) <= 3 * 9 * 9, count_include_pad
        want = model(x).numpy()
        np.testing.assert_allclose(run_llvm(mod, x.numpy()), want, rtol=1e-6, atol=1e-7)
