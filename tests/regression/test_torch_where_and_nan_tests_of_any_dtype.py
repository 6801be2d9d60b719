"""Patch: `torch.where` of two dtypes, and `isnan`/`isinf`/`isfinite` of any dtype, import.

`torch.where(c, x, y)` computes in the promoted dtype of `x` and `y`; `torch.heaviside`
decomposes under torch.export to a `where` of the float values beside an int64 tensor
(`where(x < 0, 0, 1)`). Relax's `where` needs one dtype, so stock stops at import ("Binary
operators must have the same datatype"). And TIR's `isnan` takes IEEE floats only: `isnan`,
`isinf`, `isfinite` of a bool or bfloat16 tensor stop the build ("Data type T.bool not
supported for isnan op"), which `heaviside` of bools reaches too. On the fork each imports
and matches PyTorch, values and dtypes.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

X = torch.tensor([-1.5, 0.0, 2.0, -0.0, float("nan"), float("inf"), -float("inf")])

CASES = {
    "where_float_and_int64": (lambda x: torch.where(x > 0, x, torch.arange(7)), X),
    "where_int64_and_bool": (lambda x: torch.where(x > 0, torch.arange(7), x < 0), X),
    "heaviside_float32": (lambda x: torch.heaviside(x, torch.full_like(x, 0.5)), X),
    "heaviside_bool": (lambda x: torch.heaviside(x > 0, x < 0), X),
    "isnan_bool": (lambda x: torch.isnan(x > 0), X),
    "isinf_int64": (lambda x: torch.isinf(torch.arange(7) - 3 + (x > 0).long()), X),
    "isfinite_bool": (lambda x: torch.isfinite(x > 0), X),
    "isnan_bfloat16": (lambda x: torch.isnan(x), X.bfloat16()),
    "isinf_bfloat16": (lambda x: torch.isinf(x), X.bfloat16()),
    "isfinite_bfloat16": (lambda x: torch.isfinite(x), X.bfloat16()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_imports_and_matches_pytorch(name: str) -> None:
    f, x = CASES[name]
    got, want = eager_and_tvm(Lambda(f), x)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_where_of_one_dtype_imports_as_before() -> None:
    got, want = eager_and_tvm(Lambda(lambda x: torch.where(x > 0, x, -x)), X)
    np.testing.assert_array_equal(got[0], want[0])
