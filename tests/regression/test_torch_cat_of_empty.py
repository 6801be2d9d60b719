"""Patch: torch.cat leaves out the tensors with no elements along its axis.

DeepSeek-V4 concatenates its attention's keys with a compressed cache that has no rows while
the prompt is shorter than the compression ratio: `torch.cat([kv, empty], dim=2)`. Kept in the
concatenation, the empty tensor's own kernels (its zeros, their `unsqueeze`) went into the
build, and where they were not fused (bfloat16: on stock always) `RewriteDataflowReshape`
stopped the build: "Reshape expects the new shape to be convertible from the old shape ...
R.shape([1, 0, 8]) ... R.shape([1, 1, 8, 8])". DeepSeek-V4 in bfloat16 did not build, with or
without a cache. On the fork an empty tensor adds nothing to a concatenation, as in PyTorch,
and the model matches PyTorch.
"""

from __future__ import annotations

import pytest
import torch

from .relaxrun import assert_outputs_match, eager_and_tvm


class WithEmptyCache(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        empty = torch.zeros(1, 0, 8, dtype=x.dtype).unsqueeze(1)
        kv = torch.cat([x, empty], dim=2)
        return (kv.reshape(1, -1, 8) * 2).softmax(-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cat_with_a_tensor_empty_along_the_axis(dtype: torch.dtype) -> None:
    got, want = eager_and_tvm(WithEmptyCache(), torch.randn(1, 1, 12, 8).to(dtype))
    assert_outputs_match(got, want, rtol=1e-6, atol=1e-6)
