"""Patch: `torch.scatter(x, dim, index, src)` with a tensor of values imports.

The exported-program importer had `scatter.value` (a number) but not `scatter.src` (a tensor),
so a MoE router that scatters its top-k scores into a row (Llama 4: `full_like(logits,
-inf).scatter_(1, indices, values)`) stopped at import: "Unsupported function types
['scatter.src']". On the fork it imports; `src` larger than `index` is read where `index`
covers it, as torch does; the results match PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch

from .relaxrun import eager_and_tvm


class TopKRouter(torch.nn.Module):
    """A router's sparse scores: each token's top-2 expert scores, zero elsewhere."""

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        values, indices = torch.topk(logits, 2, dim=-1)
        return torch.zeros_like(logits).scatter(1, indices, torch.sigmoid(values))


def test_top_k_router_scores_match_pytorch() -> None:
    got, want = eager_and_tvm(TopKRouter(), torch.randn(5, 8))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


def test_a_larger_source_is_read_where_index_covers_it() -> None:
    class Scatter(torch.nn.Module):
        def forward(self, x: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
            return x.scatter(0, index, src)

    index = torch.tensor([[2, 0, 1], [0, 2, 2]])
    got, want = eager_and_tvm(Scatter(), torch.zeros(3, 3), index, torch.randn(4, 5))
    np.testing.assert_array_equal(got[0], want[0])
