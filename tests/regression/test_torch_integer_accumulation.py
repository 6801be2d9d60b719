"""Patch: sums, products and scans of bool and integer tensors accumulate in int64, as in
PyTorch.

PyTorch promotes a bool or integer tensor's `cumsum`, `cumprod` and `prod` (as its `sum`) to
int64. The importer kept the input's dtype: `(x > 0).cumsum(-1)` was a bool scan, whose add
the LLVM code generator refuses ("Check failed: (t.MatchesCode(DLDataTypeCode::kDLFloat))"),
and an int32 scan would wrap where PyTorch's does not. transformers 5.x looks for packed
sequences with `(position_ids.diff(dim=-1) != 1).cumsum(-1)` whenever a decoder LM is called
without a cache and without a mask, the plain `model(ids, use_cache=False)` of scoring and
perplexity: Llama, Mistral, Qwen, Gemma, Phi-3, GPT-2 and others then did not compile. On the
fork each matches PyTorch, the integers exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tvm.relax.frontend.torch import from_exported_program

from .hf import decoder_lm, on_ids
from .relaxrun import run_llvm


class Accumulate(torch.nn.Module):
    def __init__(self, op: str, dtype: torch.dtype) -> None:
        super().__init__()
        self.op, self.dtype = op, dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dtype == torch.bool:
            values = x > 0
        elif self.dtype == torch.uint8:  # small enough to be exact, large enough to wrap a sum
            values = (x.abs() * 20).to(self.dtype)
        else:
            values = (x * 1000).to(self.dtype)
        if self.op == "prod":
            return torch.prod(values[:, :3])
        return getattr(torch, self.op)(values, -1)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "prod"])
@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.uint8])
def test_bool_and_integer_accumulations_are_int64_as_pytorch(op: str, dtype: torch.dtype) -> None:
    x = torch.randn(4, 50)
    model = Accumulate(op, dtype)
    with torch.no_grad():
        want = model(x).numpy()
        mod = from_exported_program(torch.export.export(model, (x,)))
    got = run_llvm(mod, x.numpy())
    assert got.dtype == want.dtype == np.int64
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["llama", "qwen2", "gpt2"])
def test_a_decoder_lm_called_without_a_cache(name: str) -> None:
    model = on_ids(decoder_lm(name), "logits", use_cache=False)  # as for scoring: no mask
    ids = torch.randint(0, 256, (1, 12))
    with torch.no_grad():
        want = model(ids).numpy()
        mod = from_exported_program(torch.export.export(model, (ids,)), keep_params_as_input=False)
    got = run_llvm(mod, ids.numpy())
    scale = float(np.abs(want).max())
    assert float(np.abs(got - want).max()) <= 1e-3 * scale
