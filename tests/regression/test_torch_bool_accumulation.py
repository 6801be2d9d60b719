"""Patch: bool tensors accumulate by index as PyTorch adds bools, as a logical or.

`index_put_(..., accumulate=True)` and `index_add` of bool tensors (PyTorch's op tests of both,
in the bool dtype) reached `R.index_put` with `accumulate` on bools, which TIR cannot add:
"Check failed: (t.MatchesCode(DLDataTypeCode::kDLFloat))". On the fork they are counted in
int32 and tested for nonzero, PyTorch's result (a repeated index is still True).
"""

from __future__ import annotations

import torch

from .relaxrun import Lambda, assert_outputs_match, eager_and_tvm


def test_index_put_accumulating_bools() -> None:
    index = torch.tensor([0, 2, 2, 4])
    put = Lambda(lambda x, v: x.index_put((index,), v, accumulate=True))
    x = torch.tensor([False, False, True, False, False, True])
    got, want = eager_and_tvm(put, x, torch.tensor([True, False, True, True]))
    assert_outputs_match(got, want)


def test_index_add_of_bools() -> None:
    add = Lambda(lambda x, v: x.index_add(0, torch.tensor([1, 3, 1]), v))
    x = torch.zeros(5, 2, dtype=torch.bool)
    v = torch.tensor([[True, False], [False, False], [False, True]])
    got, want = eager_and_tvm(add, x, v)
    assert_outputs_match(got, want)
