"""Patch: `argmax` and `argmin` of bfloat16 tensors build for CPUs.

A bfloat16 model's greedy next token is `logits.argmax(-1)`; `torch.min(x, dim)` imports as an
`argmin`. TOPI's argmax/argmin keep a bfloat16 running maximum in a let-binding, and TIR's
legalization of bfloat16 compute on CPUs rewrites the value to float32 but not the binding's
type, so stock stops the build: "Check failed: (ffi::StructuralEqual()(value->ty, var->ty))
is false". On the fork the legalization of `relax.argmax`/`argmin` compares bfloat16 values
in float32 (exact), and the indices match PyTorch's (distinct values, so each is unique).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .relaxrun import Lambda, eager_and_tvm

DISTINCT = (torch.randperm(35).reshape(5, 7).float() - 17) / 4  # exact in bfloat16

CASES = {
    "argmax_last": lambda x: x.argmax(-1),
    "argmin_dim0_keepdim": lambda x: x.argmin(0, keepdim=True),
    "argmax_all": lambda x: x.argmax(),
    "min_dim": lambda x: torch.min(x, 1),
    "greedy_token": lambda x: torch.softmax(x, -1).argmax(-1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bfloat16_argmax_argmin_match_pytorch(name: str) -> None:
    got, want = eager_and_tvm(Lambda(CASES[name]), DISTINCT.bfloat16())
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.astype(np.float64), w.astype(np.float64))


def test_float32_argmax_as_before() -> None:
    got, want = eager_and_tvm(Lambda(lambda x: x.argmax(-1)), DISTINCT)
    np.testing.assert_array_equal(got[0], want[0])
