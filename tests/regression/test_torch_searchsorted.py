"""Patch: torch.searchsorted imports.

`torch.searchsorted` (binning by learned boundaries, sampling from a CDF, position buckets) had
no converter: "Unsupported function types ['searchsorted.Tensor']" (PyTorch's op tests of it, in
every dtype). On the fork it is TOPI's `searchsorted`, with PyTorch's `right`/`side`,
`out_int32` and `sorter`, and matches PyTorch exactly.
"""

from __future__ import annotations

import pytest
import torch

from .relaxrun import Lambda, assert_outputs_match, eager_and_tvm

CALLS = {
    "batched": lambda s, v, u, o: torch.searchsorted(s, v),
    "right": lambda s, v, u, o: torch.searchsorted(s, v, right=True),
    "one_sequence_int32": lambda s, v, u, o: torch.searchsorted(
        s[0], v, side="right", out_int32=True
    ),
    # an unsorted sequence and the order that sorts it
    "sorter": lambda s, v, u, o: torch.searchsorted(u, v, sorter=o),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_searchsorted(call: str) -> None:
    g = torch.Generator().manual_seed(0)
    seq = torch.sort(torch.randn(3, 7, generator=g), dim=-1).values
    values = torch.cat([torch.randn(3, 4, generator=g), seq[:, 2:3]], dim=1)  # a tie too
    unsorted = seq[1][torch.randperm(7, generator=g)]
    got, want = eager_and_tvm(Lambda(CALLS[call]), seq, values, unsorted, unsorted.argsort())
    assert_outputs_match(got, want)


def test_searchsorted_in_an_empty_sequence() -> None:
    """Every value goes first (PyTorch's op tests' third sample, with an empty sorter too):
    TOPI's kernel needs an element and stopped the build ("indices_dim_i >= 1")."""
    seq, values, sorter = torch.zeros(0), torch.randn(4), torch.zeros(0, dtype=torch.int64)
    calls = Lambda(lambda s, v, o: (torch.searchsorted(s, v), torch.searchsorted(s, v, sorter=o)))
    got, want = eager_and_tvm(calls, seq, values, sorter)
    assert_outputs_match(got, want)
