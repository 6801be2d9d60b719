"""Patch: floating-point functions of integer and bool tensors compute in float32.

PyTorch computes `exp`, `log`, `sin`, `tanh`, `sigmoid`, `erf`, `sqrt` and the other
floating-point functions of an integer or bool tensor in its default float dtype (`torch.exp(ids)`
is float32); the Relax ops take floating-point tensors only, so each stopped at import: "requires
the input tensor to have float dtype. However, the given input dtype is T.int64" (PyTorch's own
op tests: 41 of `acos` ... `tanh`, `sigmoid` in int64 and bool). On the fork the tensor is cast to
float32 first and the result is PyTorch's.
"""

from __future__ import annotations

import pytest
import torch

from .relaxrun import Lambda, assert_outputs_match, eager_and_tvm

NAMES = [
    "acos",
    "asinh",
    "atan",
    "cos",
    "cosh",
    "erf",
    "exp",
    "expm1",
    "log",
    "log10",
    "log1p",
    "log2",
    "rsqrt",
    "sigmoid",
    "sin",
    "sqrt",
    "tan",
    "tanh",
]


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool], ids=["int64", "bool"])
@pytest.mark.parametrize("name", NAMES)
def test_float_function_of_an_integer_tensor_is_pytorch_s(name: str, dtype: torch.dtype) -> None:
    fn = getattr(torch, name)
    x = torch.tensor([[0, 1, 2], [3, 5, 7]]).to(dtype)
    if name in ("acos",):
        x = x.clamp(max=1)  # its domain: 0 and 1
    got, want = eager_and_tvm(Lambda(fn), x)
    assert want[0].dtype == "float32"
    # float32, within float32's rounding of PyTorch's (inf and nan where PyTorch has them)
    assert_outputs_match(got, want, rtol=1e-6, atol=1e-6)
