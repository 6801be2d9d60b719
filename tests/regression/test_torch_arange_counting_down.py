"""Patch: `torch.arange` with a negative integer step has the length PyTorch gives it.

Relax's `arange` shapes an integer range as floordiv(end - start + step - 1, step), right
for a positive step only: `arange(12, -12, -1)` is typed as 26 elements where it has 24, so
whatever is shaped by it fails at import ("broadcast_to expects ... 24 while the input tensor
shape at dim 1 is 26"). transformers' Funnel builds its relative positions so, in every
calling convention. On the fork a countdown imports as the positions of a step of 1, scaled:
its length is Python's `len(range(...))`, and the values match PyTorch exactly.
"""

from __future__ import annotations

import pytest
import torch

from .relaxrun import Lambda, assert_outputs_match, eager_and_tvm

CASES = {
    "relative_positions": lambda x: torch.arange(12, -12, -1)[None, :].expand(2, 24) * x,
    "step_of_two": lambda x: torch.arange(5, 0, -2) * x,
    "down_to_zero_length_one": lambda x: torch.arange(0, -1, -3) + x,
    "in_a_sum": lambda x: (torch.arange(8, -8, -3) * x).sum(0, keepdim=True) + torch.zeros(6),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_countdown_matches_pytorch(name: str) -> None:
    got, want = eager_and_tvm(Lambda(CASES[name]), torch.tensor(3))
    assert_outputs_match(got, want)
