"""Patch: arithmetic on two bool tensors computes as PyTorch defines it.

PyTorch adds bool tensors as a logical or (`mask_a + mask_b`, a common way to merge attention
or padding masks), multiplies them as a logical and, and takes `maximum`/`minimum` as or/and.
The importer emitted `R.add` / `R.multiply` on bool, which TIR cannot lower: the build stopped
with "Check failed: (t.MatchesCode(DLDataTypeCode::kDLFloat))" (PyTorch's op tests: `add`,
`mul`, `maximum`, `minimum` in bool; the issue's 250-odd bool cases that did not compile). On
the fork they are `logical_or` / `logical_and`, exactly PyTorch's result, and stay bool.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

CASES = {
    "add": lambda x, y: x + y,
    "mul": lambda x, y: x * y,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "add_true": lambda x, y: x + True,
    "merged_masks": lambda x, y: (x + y) * y.logical_not().logical_not(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bool_arithmetic_matches_pytorch(name: str) -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(3, 7, generator=gen) > 0.5
    y = torch.rand(3, 7, generator=gen) > 0.5
    got, want = eager_and_tvm(Lambda(CASES[name]), x, y)
    assert got[0].dtype == np.bool_
    np.testing.assert_array_equal(got[0], want[0])
