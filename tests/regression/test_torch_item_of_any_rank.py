"""Patch: `x.item()` of a 0-d tensor (and of any one-element tensor).

XLM and FlauBERT check a padded batch's lengths with `lengths.max().item() <= seq_len`:
`max()` gives a 0-d tensor, and the importer took its element with `take(x, 0, axis=0)`,
which refuses a tensor with no axis, so both masked LMs stopped at import. On the fork they
import, and an XLM masked LM on a right-padded batch matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch

from .hf import transformers
from .relaxrun import eager_and_tvm


class Lengths(torch.nn.Module):
    """The longest row of a padded batch, checked against its width as XLM does."""

    def forward(self, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(dim=1)
        longest = lengths.max().item()
        torch._check(longest <= mask.shape[1])
        return lengths * 2


def test_item_of_a_reduction() -> None:
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    got, want = eager_and_tvm(Lengths(), mask)
    np.testing.assert_array_equal(got[0], want[0])


def test_xlm_masked_lm_on_a_padded_batch() -> None:
    hf = transformers()
    config = hf.XLMConfig(
        vocab_size=128, emb_dim=64, n_layers=2, n_heads=4, max_position_embeddings=64
    )
    model = hf.XLMWithLMHeadModel(config).eval()

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=ids, attention_mask=mask).logits

    ids = torch.randint(4, 128, (2, 10))
    mask = torch.ones(2, 10, dtype=torch.int64)
    mask[1, 7:] = 0
    ids[1, 7:] = config.pad_index
    got, want = eager_and_tvm(Logits(), ids, mask)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
