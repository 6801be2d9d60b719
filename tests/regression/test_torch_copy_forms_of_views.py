"""Patch: the copying forms of view ops import (`view_copy`, `permute_copy`, `narrow_copy`,
`unbind_copy`, `as_strided_copy`).

A functionalized program (and PyTorch's op tests of these ops, 30 cases) holds the `_copy`
forms, which had no converter: "Unsupported function types ['view_copy.default']". On the
fork each is its view's converter: the same values, exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

aten = torch.ops.aten


CASES = {
    "view_copy": lambda x: aten.view_copy(x, [4, 6]),
    "permute_copy": lambda x: aten.permute_copy(x, [2, 0, 1]),
    "narrow_copy": lambda x: aten.narrow_copy(x, 1, 1, 2),
    "unbind_copy": lambda x: aten.unbind_copy(x, 2)[1],
    "as_strided_copy": lambda x: aten.as_strided_copy(x, [2, 12], [12, 1]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_copy_form_matches_pytorch(name: str) -> None:
    got, want = eager_and_tvm(Lambda(CASES[name]), torch.randn(2, 3, 4))
    np.testing.assert_array_equal(got[0], want[0])
