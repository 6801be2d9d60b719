"""Patch: `x[mask] = value` with a bool mask imports.

Gemma 3 (the multimodal `gemma3` model, called on text) zeroes its image-token ids with
`ids[ids >= vocab] = 0`, an `index_put_` with a bool mask. Relax's index_put takes integer
indices only, and the importer passed the mask on: "IndexPut requires each index tensor to have
integer dtype. However, index tensor 0 has dtype=T.bool". On the fork a bool mask over the
tensor's leading dimensions with a value that broadcasts to each masked element is a `where`
(with `accumulate`, an add); the results match PyTorch exactly.
"""

from __future__ import annotations

import numpy as np
import torch

from .relaxrun import eager_and_tvm


class ClampIds(torch.nn.Module):
    """Token ids outside a vocabulary set to 0, as Gemma 3 does to image-token ids."""

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        ids = ids.clone()
        ids[ids >= 6] = 0
        return ids * 2


def test_masked_ids_match_pytorch() -> None:
    got, want = eager_and_tvm(ClampIds(), torch.randint(0, 10, (2, 7)))
    np.testing.assert_array_equal(got[0], want[0])


def test_masked_rows_and_accumulation_match_pytorch() -> None:
    class Rows(torch.nn.Module):
        def forward(self, x: torch.Tensor, rows: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
            x = torch.index_put(x, (rows,), torch.arange(4.0))
            return torch.index_put(x, (cells,), torch.tensor(1.5), accumulate=True)

    x, rows, cells = torch.randn(3, 4), torch.tensor([True, False, True]), torch.rand(3, 4) > 0.5
    got, want = eager_and_tvm(Rows(), x, rows, cells)
    np.testing.assert_array_equal(got[0], want[0])
