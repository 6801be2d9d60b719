"""Patch: true division of integers gives float32, as in PyTorch.

`torch.export` keeps `ids / 8` of an int64 tensor as `aten.div.Tensor` (and `7 / ids` as
`reciprocal` then `mul`); PyTorch computes them in its default float dtype. Stock divided
the integers as integers: `i / 8` of positions -10..9 came out 0 and -1 where PyTorch has
0.125 and -1.25 (a silent wrong number), an int64 tensor divided by an int32 one stopped at
import ("Binary operators must have the same datatype"), and DeBERTa-v2/v3's log-bucketed
relative positions (`torch.log(abs_pos / mid)`) stopped at import ("relax.log requires the
input tensor to have float dtype"). On the fork each matches PyTorch.
"""

from __future__ import annotations

import numpy as np
import torch
from tvm.relax.frontend.torch import from_exported_program

from .hf import transformers
from .relaxrun import run_llvm


class Scaled(torch.nn.Module):
    """int64 positions divided by a Python int: the silent wrong number on stock."""

    def forward(self, i: torch.Tensor) -> torch.Tensor:
        return i / 8


class Mixed(torch.nn.Module):
    """Each integer form of true division PyTorch makes float32."""

    def forward(self, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
        return i / j + 7 / j + (i > 0) / 2 + i / 2.5 + torch.div(i, j, rounding_mode=None)


def _run(model: torch.nn.Module, *args: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    with torch.no_grad():
        want = model(*args)
        mod = from_exported_program(torch.export.export(model.eval(), args))
    return run_llvm(mod, *[a.numpy() for a in args]), want.numpy()


def test_an_integer_tensor_divided_by_an_int_is_fractional() -> None:
    got, want = _run(Scaled(), torch.arange(-10, 10))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_every_integer_form_of_true_division() -> None:
    got, want = _run(Mixed(), torch.arange(-10, 10), torch.arange(1, 21, dtype=torch.int32))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_deberta_v3_with_log_bucketed_relative_positions() -> None:
    """A 1-layer DeBERTa-v3 (relative attention, 16 position buckets) on 64 tokens, where
    positions beyond the buckets' linear range take the log path, against PyTorch."""
    hf = transformers()
    cfg = hf.AutoConfig.for_model(
        "deberta-v2",
        vocab_size=512,
        hidden_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=128,
        relative_attention=True,
        position_buckets=16,
        pos_att_type=["p2c", "c2p"],
        max_relative_positions=-1,
        position_biased_input=False,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
    )
    model = hf.DebertaV2Model(cfg).eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.model(input_ids=ids).last_hidden_state
            return out

    got, want = _run(Hidden(), torch.randint(0, 512, (1, 64)))
    assert np.isfinite(got).all()
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
