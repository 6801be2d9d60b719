"""Patch: layer norms, instance norms, batch norms, powers and remainders of bfloat16 tensors
compute in float32.

TOPI's layer_norm and instance_norm accept float32 and float16 only, and TIR's `pow` has no
bfloat16 form, so every bfloat16 model with a LayerNorm (BERT, ViT, GPT-2) or a tanh GELU
(GPT-2's `x ** 3`) stopped at compile: "layer_norm: only support float32 and float16 for now",
"power only applies to float". TOPI's batch_norm gave bfloat16 and float16 inputs a float32
result, and `torch.fmod` of bfloat16 tensors gave denormal garbage, silently. On the fork these
ops compute in float32 and round to the input's dtype once, as PyTorch does on CPU; the models
match PyTorch's bfloat16 run at bfloat16's precision.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .hf import on_ids, transformers
from .relaxrun import eager_and_tvm

BF16_STEP = 2.0**-8  # bfloat16's relative step


class Norms(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.LayerNorm(16)
        self.instance = torch.nn.InstanceNorm1d(4, affine=True)
        self.batch = torch.nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.layer(x), self.instance(x), self.batch(x), x**3


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    g, w = got.astype(np.float64), want.astype(np.float64)
    return float(np.abs(g - w).max() / np.abs(w).max())


def test_bfloat16_norms_and_cubes_match_pytorch() -> None:
    torch.manual_seed(0)
    model = Norms().to(torch.bfloat16).eval()
    with torch.no_grad():  # affine parameters and statistics that are not the identity
        for p in model.parameters():
            p.normal_()
        model.batch.running_mean.normal_()
        model.batch.running_var.uniform_(0.5, 2.0)
    got, want = eager_and_tvm(model, torch.randn(2, 4, 16, dtype=torch.bfloat16))
    for g, w in zip(got, want, strict=True):
        assert str(g.dtype) == "bfloat16"
        # PyTorch rounds a float32 result once (batch norm's in another order): TVM's is
        # within one bfloat16 step of the largest value, 2**-7 of it at most
        assert _relative(g, w) <= 2 * BF16_STEP


def _bert() -> torch.nn.Module:
    hf = transformers()
    config = hf.BertConfig(
        vocab_size=128,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
    )
    return on_ids(hf.BertModel(config), "last_hidden_state")


def _gpt2() -> torch.nn.Module:
    hf = transformers()
    config = hf.GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4)
    return on_ids(hf.GPT2LMHeadModel(config), "logits")


@pytest.mark.parametrize("make", [_bert, _gpt2], ids=["bert", "gpt2"])
def test_bfloat16_transformers_match_pytorch(make: object) -> None:
    torch.manual_seed(0)
    model = make().to(torch.bfloat16)  # type: ignore[operator]
    got, want = eager_and_tvm(model, torch.randint(0, 128, (1, 12)))
    assert str(got[0].dtype) == "bfloat16"
    # two layers each rounding in other places than PyTorch: a few steps of the largest value
    assert _relative(got[0], want[0]) <= 5 * BF16_STEP


class Remainders(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.fmod(x, y), torch.remainder(x, y)


def test_bfloat16_fmod_and_remainder_match_pytorch() -> None:
    # LLVM's frem of bfloat16 gave denormal garbage (fmod(-8.5, -1.77) was 4e-39)
    x = torch.tensor([-8.5, 5.5, -3.25, 7.0], dtype=torch.bfloat16)
    y = torch.tensor([-1.765625, 2.0, 1.5, -2.5], dtype=torch.bfloat16)
    got, want = eager_and_tvm(Remainders(), x, y)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.astype(np.float32), w.astype(np.float32))
