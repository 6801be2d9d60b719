"""Patch: the checks torch.export records on values and views import as checks.

torch.export records `_assert_async` where an op checks its input's values (`one_hot`: every
class index in range) and `sym_storage_offset` where it checks a view's offset into its
storage (`tensor_split` at positions read from a tensor; OPT's generation, slicing its
positions from a run-time start). Stock's importer has neither ("Unsupported function types
['_assert_async.msg']", "... ['sym_storage_offset.default']"), so `one_hot` and those splits
did not import. On the fork the value check is dropped as `_assert_scalar` is, and a storage
offset only checked is 0 (one used as a value is refused); each op matches PyTorch.
"""

from __future__ import annotations

import torch

from .relaxrun import Lambda, assert_outputs_match, eager_and_tvm


def test_one_hot() -> None:
    indices = torch.tensor([[1, 4, 0], [2, 2, 3]])
    got, want = eager_and_tvm(Lambda(lambda x: torch.nn.functional.one_hot(x, 5)), indices)
    assert_outputs_match(got, want)


def test_tensor_split_at_positions_from_a_tensor() -> None:
    x = torch.randn(3, 9)
    split = Lambda(lambda x, at: torch.tensor_split(x, at, dim=1))
    got, want = eager_and_tvm(split, x, torch.tensor([2, 7]))
    assert_outputs_match(got, want)


def test_a_bool_item_as_a_tensor() -> None:
    """`torch.tensor(flag.item())`: torch.export checks the bool's range through
    `sym_ite(item, 1, 0)` (PyTorch's op tests: `item` of bool)."""
    for value in (True, False):
        got, want = eager_and_tvm(Lambda(lambda x: torch.tensor(x.item())), torch.tensor(value))
        assert_outputs_match(got, want)
