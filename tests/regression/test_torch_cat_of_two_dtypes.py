"""Patch: `torch.cat` of tensors of two dtypes imports, in PyTorch's promoted dtype.

`torch.cat` promotes its tensors to one dtype: a float32 state beside a bfloat16 one in a
half-precision model (dots3 and FLINT in bfloat16, from transformers' registry), an int64
tensor beside a float one, a bool mask beside int64 ids. Relax's concat needs one dtype, so
stock (and the fork before this patch) stopped at import: "Concat expects all input tensors
to have the same dtype". On the fork the tensors are cast to the dtype torch.export records
for the result, and the values match PyTorch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

CASES = {
    "float32_and_bfloat16": (torch.randn(2, 3), torch.randn(2, 2).bfloat16()),
    "int64_and_float32": (torch.arange(6).reshape(2, 3), torch.randn(2, 2)),
    "bool_and_int64": (
        torch.tensor([[True, False, True], [False, True, False]]),
        torch.ones(2, 1, dtype=torch.int64),
    ),
    "float16_and_float64": (torch.randn(2, 3).half(), torch.randn(2, 1, dtype=torch.float64)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_cat_matches_pytorch(name: str) -> None:
    x, y = CASES[name]
    got, want = eager_and_tvm(Lambda(lambda a, b: torch.cat([a, b], 1)), x, y)
    assert got[0].dtype == want[0].dtype
    np.testing.assert_array_equal(got[0].astype(np.float64), want[0].astype(np.float64))


def test_cat_of_one_dtype_as_before() -> None:
    got, want = eager_and_tvm(Lambda(lambda a: torch.cat([a, a * 2], 0)), torch.randn(2, 3))
    np.testing.assert_array_equal(got[0], want[0])
