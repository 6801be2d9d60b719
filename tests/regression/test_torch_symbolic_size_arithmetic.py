"""Patch: Python arithmetic on symbolic sizes, and slices bounded by it.

With a dynamic sequence length, torch.export records Python's `+`, `-` and `//` on the
length (`operator.add(1, s)`) where a model computes a slice's bound from it. Stock's importer
maps only `mul`: "Unsupported function types ['add']". transformers 5.x's decoder LMs called
the plain way, `model(ids, use_cache=False)`, slice `[..., 1 : 1 + seq]` when they look for
packed sequences, so Llama, Qwen2, Mistral and the others did not import at a dynamic length.
Two more steps then failed: a slice along a negative dim with a symbolic bound reached TOPI's
dynamic slice unnormalized ("axis < src_tensor_dim (-1 vs. 2)"), and a slice whose start is
symbolic (`[n - 1 : 2 * n - 1]`) was clamped to a shape no later op could match. On the fork
each imports, builds once and matches PyTorch at every length.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program

from .hf import decoder_lm, on_ids


class Shifted(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = x.shape[-1]
        both = torch.cat([x, x], dim=-1)
        shifted = both[..., 1 : 1 + n] * 2 + both[..., n - 1 : 2 * n - 1]
        return torch.arange(n // 2) * 3, shifted


def _build(model: torch.nn.Module, example: torch.Tensor, dynamic: tuple):
    with torch.no_grad():
        exported = torch.export.export(model, (example,), dynamic_shapes=dynamic)
    mod = from_exported_program(exported, keep_params_as_input=False)
    return relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())


def test_slices_bounded_by_arithmetic_on_a_dynamic_length() -> None:
    vm = _build(Shifted(), torch.randn(2, 6), ({1: torch.export.Dim("n", min=4, max=64)},))
    for length in (6, 9, 17):
        x = torch.randn(2, length)
        got = [t.numpy() for t in vm["main"](tvm.runtime.tensor(x.numpy()))]
        want = [t.numpy() for t in Shifted()(x)]
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["llama", "qwen2"])
def test_a_decoder_lm_without_a_cache_at_a_dynamic_length(name: str) -> None:
    model = on_ids(decoder_lm(name), "logits", use_cache=False)  # scoring: no cache, no mask
    seq = torch.export.Dim("seq", min=2, max=64)
    vm = _build(model, torch.randint(0, 256, (1, 12)), (({1: seq},),))  # forward(*ids)
    for length in (5, 12, 30):
        ids = torch.randint(0, 256, (1, length))
        with torch.no_grad():
            want = model(ids).numpy()
        got = vm["main"](tvm.runtime.tensor(ids.numpy()))
        got = (got if isinstance(got, tvm.runtime.Tensor) else got[0]).numpy()
        assert got.shape == want.shape
        assert float(np.abs(got - want).max()) <= 1e-3 * float(np.abs(want).max())
