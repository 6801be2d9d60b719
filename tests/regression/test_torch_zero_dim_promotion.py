"""Patch: a 0-d tensor beside a tensor of dimensions promotes it as in PyTorch.

PyTorch's type promotion ranks a 0-d tensor below a tensor of dimensions: it changes the
result's dtype only where it is of a higher category (bool < integer < floating). A bfloat16
model's attention clamps its scores with `torch.max(scores, torch.tensor(finfo.min))`, a
float32 0-d tensor (XGLM); PyTorch keeps the scores bfloat16. The importer promoted both to
float32 (`promote_types`, ranks ignored), and the float32 scores then met the bfloat16
layer norm's weights: "the gamma has dtype T.bfloat16 which is other than the input data's
dtype T.float32", so XGLM in bfloat16 did not import; where nothing refused it, the result
came out in float32 where PyTorch's is bfloat16. On the fork the dtypes are PyTorch's.
"""

from __future__ import annotations

import pytest
import torch

from .relaxrun import Lambda, assert_outputs_match, eager_and_tvm


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_half_tensor_with_a_float32_0_d_tensor(dtype: torch.dtype) -> None:
    floor = torch.tensor(-0.25)  # float32, 0-d
    model = Lambda(lambda x: torch.maximum(x, floor) * torch.tensor(3.0) + torch.tensor(1.0))
    got, want = eager_and_tvm(model, torch.randn(4, 6).to(dtype))
    assert_outputs_match(got, want)


def test_the_0_d_tensor_s_category_still_promotes() -> None:
    # an integer tensor with a floating 0-d tensor is floating, as in PyTorch
    model = Lambda(lambda x: x * torch.tensor(0.5, dtype=torch.float64))
    got, want = eager_and_tvm(model, torch.arange(6).reshape(2, 3))
    assert_outputs_match(got, want)
