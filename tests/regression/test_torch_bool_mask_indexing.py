"""Patch: `x[mask]` and `y[mask] = values` with a bool mask, values one per masked element.

Stock's importer hands a bool mask to `take` (or `R.index_put`) as if it were an index: "Take
op requires the input indices to have integer dtype ... T.bool", so any model that selects
rows by a mask stops at import. transformers' X-MOD does it in every layer (each language's
adapter runs on that language's tokens: `h[lang_ids == i]`, then `new[mask] = adapted`). On
the fork a mask indexes as its true elements' positions (`mask.nonzero(as_tuple=True)`),
their count known at run time, and the results match PyTorch.
"""

from __future__ import annotations

import pytest
import torch

from .relaxrun import Lambda, assert_outputs_match, eager_and_tvm


def _adapter(x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """X-MOD's per-language adapter, in small: rows of one language through their own layer."""
    out = torch.zeros_like(x)
    for lang in range(2):
        mask = ids == lang
        out[mask] = torch.tanh(x[mask] * (lang + 2))
    return out + x


def _accumulate(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    mask = m > 0
    return x.index_put((mask,), x[mask] * 3, accumulate=True)


X = torch.randn(2, 5, 8)
IDS = torch.tensor([[0, 1, 0, 2, 0], [1, 0, 0, 1, 2]])
CASES = {
    "rows_of_a_2d_mask": (lambda x, ids: x[ids == 0] * 2, (X, IDS)),
    "middle_dimension": (lambda x, m: x[:, m > 0], (X, torch.randn(5))),
    "mask_then_index": (lambda x, m: x[m > 0, 1], (torch.randn(6, 3), torch.randn(6))),
    "none_selected": (lambda x, ids: x[ids > 5] + 1, (X, IDS)),
    "assign_masked_rows": (_adapter, (X, IDS)),
    "accumulate_masked_rows": (_accumulate, (torch.randn(6, 3), torch.randn(6))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bool_mask_indexing_matches_pytorch(name: str) -> None:
    f, args = CASES[name]
    got, want = eager_and_tvm(Lambda(f), *args)
    assert_outputs_match(got, want, rtol=1e-6, atol=1e-6)
