"""Patch: CPU flash attention is decomposed in the layout the program was traced with.

torch's decomposition of `_scaled_dot_product_flash_attention_for_cpu`, which
from_exported_program runs, laid the result out as (tokens, batch, heads, width), while the
program was traced with the layout of the op's meta function (its query's). For a batch of
more than one a later `view` of the result failed to retrace: GPT-2 on a batch of two padded
prompts stopped at import ("Cannot view a tensor with shape [2, 12, 64] and strides (64, 128,
1)"). On the fork it imports and matches PyTorch, at fixed and at dynamic lengths.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program

from .hf import transformers
from .relaxrun import eager_and_tvm


class Lm(torch.nn.Module):
    """GPT-2 called on token ids and an attention mask, returning its logits."""

    def __init__(self) -> None:
        super().__init__()
        hf = transformers()
        config = hf.GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4)
        self.model = hf.GPT2LMHeadModel(config).eval()

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.model(input_ids=ids, attention_mask=mask).logits
        return logits


def _padded(length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two prompts of `length` tokens, the second right-padded by two."""
    ids = torch.randint(0, 128, (2, length))
    mask = torch.ones(2, length, dtype=torch.int64)
    mask[1, length - 2 :] = 0
    return ids, mask


def test_gpt2_on_a_padded_batch_matches_pytorch() -> None:
    torch.manual_seed(0)
    got, want = eager_and_tvm(Lm(), *_padded(12))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("length", [5, 20])
def test_gpt2_on_a_batch_of_dynamic_length_matches_pytorch(length: int) -> None:
    torch.manual_seed(0)
    model = Lm()
    seq = torch.export.Dim("seq", min=2, max=64)
    with torch.no_grad():
        exported = torch.export.export(model, _padded(12), dynamic_shapes=({1: seq}, {1: seq}))
    vm = relax.VirtualMachine(tvm.compile(from_exported_program(exported), "llvm"), tvm.cpu())
    ids, mask = _padded(length)
    with torch.no_grad():
        want = model(ids, mask).numpy()
    out = vm["main"](tvm.runtime.tensor(ids.numpy()), tvm.runtime.tensor(mask.numpy()))
    got = (out if isinstance(out, tvm.runtime.Tensor) else out[0]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
