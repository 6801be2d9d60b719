"""Patch: rotary embeddings written with complex numbers import.

Llama 4 and DeepSeek-V2 rotate queries and keys as complex numbers: `torch.polar` makes the
rotations, `view_as_complex` pairs the features, a complex product rotates them and
`view_as_real` unpairs them. Relax has no complex dtype and the importer had none of these
ops ("Unsupported function types ['polar.default', 'view_as_complex.default',
'view_as_real.default']"). On the fork a complex tensor is imported as its real [..., 2] form;
the rotation and a whole Llama 4 text model match PyTorch, and an op on complex tensors the
importer does not know stops with its name, as does a complex result.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm.relax.frontend.torch import from_exported_program

from .hf import on_ids, transformers
from .relaxrun import eager_and_tvm


class ComplexRope(torch.nn.Module):
    """Llama 4's `apply_rotary_emb`, with its frequencies from positions."""

    def forward(self, q: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        inv_freq = 1.0 / (10000 ** (torch.arange(0, q.shape[-1], 2).float() / q.shape[-1]))
        freqs = positions[:, :, None] * inv_freq[None, None, :]
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
        q_ = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
        return torch.view_as_real(q_ * freqs_cis[:, :, None, :]).flatten(3)


def test_complex_rotation_matches_pytorch() -> None:
    q, positions = torch.randn(2, 7, 4, 16), torch.arange(7).float()[None, :].expand(2, 7)
    got, want = eager_and_tvm(ComplexRope(), q, positions)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_an_unknown_complex_op_is_named() -> None:
    class ComplexExp(torch.nn.Module):
        def forward(self, q: torch.Tensor) -> torch.Tensor:
            return torch.view_as_real(torch.view_as_complex(q.reshape(-1, 2)).exp())

    exported = torch.export.export(ComplexExp(), (torch.randn(8),))
    with pytest.raises(ValueError, match=r"complex tensors: exp\.default"):
        from_exported_program(exported)


def test_a_complex_result_is_refused() -> None:
    """A complex result would leave the program as its real pairs: a different shape."""

    class Pairs(torch.nn.Module):
        def forward(self, q: torch.Tensor) -> torch.Tensor:
            return torch.view_as_complex(q.reshape(-1, 2))

    exported = torch.export.export(Pairs(), (torch.randn(8),))
    with pytest.raises(ValueError, match="a complex result is not supported"):
        from_exported_program(exported)


def test_llama4_text_matches_pytorch() -> None:
    hf = transformers()
    torch.manual_seed(0)
    config = hf.Llama4TextConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=64,
        intermediate_size_mlp=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        num_local_experts=4,
        num_experts_per_tok=1,
        max_position_embeddings=64,
    )
    model = on_ids(hf.Llama4ForCausalLM(config), "logits", use_cache=False)
    got, want = eager_and_tvm(model, torch.randint(0, 128, (1, 9)))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
