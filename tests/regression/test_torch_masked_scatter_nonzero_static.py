"""Patch: `masked_scatter` and `nonzero_static` import.

Stock's exported-program importer has no converter for either: "Unsupported function types
['masked_scatter.default']" (vision-language models put image features into the token
embeddings so: `embeds.masked_scatter(image_mask, image_features)`), and the same for
`nonzero_static`, the fixed-size `nonzero` that compilers are told to use. PyTorch's op
tests of both stop there in every dtype. On the fork `masked_scatter` puts the source's first
elements at the mask's positions (their count known at run time, the mask broadcast to the
data), and `nonzero_static` cuts or pads `nonzero`'s rows to `size`; both match PyTorch
exactly.
"""

from __future__ import annotations

import pytest
import torch

from .relaxrun import Lambda, assert_outputs_match, eager_and_tvm

X = torch.randn(3, 4)
CASES = {
    "image_features_into_embeddings": (
        lambda e, ids, f: e.masked_scatter((ids == 7)[..., None], f),
        (torch.randn(2, 5, 4), torch.tensor([[1, 7, 7, 2, 3], [7, 1, 2, 3, 4]]), torch.randn(3, 4)),
    ),
    "broadcast_mask": (
        lambda x, m, s: x.masked_scatter(m, s),
        (X, torch.tensor([True, False, True, True]), torch.randn(3, 5)),
    ),
    "nothing_masked": (lambda x, s: x.masked_scatter(x > 5, s), (X, torch.randn(2))),
    "integers": (
        lambda x, s: x.masked_scatter(x % 2 == 0, s),
        (torch.arange(6).reshape(2, 3), torch.arange(10, 20)),
    ),
    "nonzero_static_padded": (
        lambda x: torch.nonzero_static(x, size=6),
        (torch.tensor([[0.0, 1.5], [2.0, 0.0]]),),
    ),
    "nonzero_static_cut": (
        lambda x: torch.nonzero_static(x, size=2, fill_value=9),
        (torch.ones(3, 3),),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_pytorch(name: str) -> None:
    f, args = CASES[name]
    got, want = eager_and_tvm(Lambda(f), *args)
    assert_outputs_match(got, want)
